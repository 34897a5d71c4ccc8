import assert from "node:assert/strict";
import { PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import {
  type SigV4Credentials,
  SigV4Presigner,
  uriEncode,
  uriEncodePath,
} from "../../src/storage/s3/_sigv4.ts";
import { datasetKey, StorageError } from "../../src/storage/object_store.ts";
import { S3Store, type S3StoreOptions } from "../../src/storage/s3/s3_store.ts";

const NOW = new Date("2024-05-06T07:08:09.123Z");
const CREDENTIALS = { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "wJalr/K7MDENG+bPxRfiCY" };
const KEYS = [
  datasetKey("0f8e2d1c", "exp-42"),
  "org/o_2/experiments/Exp.v2~b/latest.csv",
  "odd key/ü+(1)*!'=&?#%.csv",
];

function sdkClient(
  region: string,
  endpoint: string | undefined,
  forcePathStyle: boolean,
  credentials: SigV4Credentials,
): S3Client {
  return new S3Client({
    region,
    endpoint,
    forcePathStyle,
    credentials: { ...credentials },
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
}

/** What `S3Store.presignPut` asks the SDK for: a PUT bound to the type (and the length). */
function sdkPresignPut(
  client: S3Client,
  bucket: string,
  key: string,
  options: { expiresInSeconds: number; contentLength?: number; signingDate: Date },
): Promise<string> {
  const signableHeaders = new Set(["content-type"]);
  if (options.contentLength !== undefined) signableHeaders.add("content-length");
  const command = new PutObjectCommand({
    Bucket: bucket,
    Key: key,
    ContentType: "text/csv",
    ContentLength: options.contentLength,
  });
  return getSignedUrl(client, command, {
    expiresIn: options.expiresInSeconds,
    signableHeaders,
    signingDate: options.signingDate,
  });
}

/** Compares origin, path and every query parameter, then the whole text. */
function assertSameUrl(actual: string, expected: string, what: string): void {
  const a = new URL(actual);
  const e = new URL(expected);
  assert.equal(a.origin, e.origin, what);
  assert.equal(a.pathname, e.pathname, what);
  assert.deepEqual([...a.searchParams].sort(), [...e.searchParams].sort(), what);
  assert.equal(actual, expected, what);
}

/** Counts the SDK's request pipelines built for PutObject (one per `getSignedUrl`). */
function countSdkPresigns(): { readonly count: number; restore(): void } {
  const prototype = PutObjectCommand.prototype as unknown as Record<string, unknown>;
  const original = prototype.resolveMiddleware as (...args: unknown[]) => unknown;
  const counter = { count: 0, restore: () => void delete prototype.resolveMiddleware };
  prototype.resolveMiddleware = function (this: unknown, ...args: unknown[]) {
    counter.count++;
    return original.apply(this, args);
  };
  return counter;
}

Deno.test("SigV4Presigner reproduces the AWS documentation's presigned GET example", () => {
  const signer = new SigV4Presigner(
    {
      accessKeyId: "AKIAIOSFODNN7EXAMPLE",
      secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    },
    { region: "us-east-1" },
  );
  const url = signer.presign({
    method: "GET",
    origin: "https://examplebucket.s3.amazonaws.com",
    path: "/test.txt",
    expiresInSeconds: 86400,
    now: new Date("2013-05-24T00:00:00Z"),
  });
  assert.equal(
    url,
    "https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256" +
      "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request" +
      "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400" +
      "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404" +
      "&X-Amz-SignedHeaders=host",
  );
});

Deno.test("SigV4Presigner signs PUT URLs exactly as the SDK's getSignedUrl does", async () => {
  const endpoint = "https://gateway.example.test:8443";
  const bucket = "abn-data";
  let compared = 0;
  for (const region of ["us-east-1", "eu-central-1", "cn-north-1"]) {
    const client = sdkClient(region, endpoint, true, CREDENTIALS);
    const signer = new SigV4Presigner(CREDENTIALS, { region });
    try {
      for (const key of KEYS) {
        // Mixed lifetimes and lengths at one signing time: the signer keeps canonical queries
        // made within a second, and each must still be the one for its own parameters.
        for (
          const [contentLength, expiresInSeconds] of [
            [undefined, 900],
            [0, 900],
            [1234567, 900],
            [undefined, 60],
            [1234567, 60],
          ] as const
        ) {
          const what = `${region} ${key} ${contentLength} ${expiresInSeconds}`;
          const expected = await sdkPresignPut(client, bucket, key, {
            expiresInSeconds,
            contentLength,
            signingDate: NOW,
          });
          const headers: Record<string, string> = { "content-type": "text/csv" };
          if (contentLength !== undefined) headers["content-length"] = String(contentLength);
          const actual = signer.presign({
            method: "PUT",
            origin: endpoint,
            path: `/${bucket}/${uriEncodePath(key)}`,
            headers,
            query: { "X-Amz-Content-Sha256": "UNSIGNED-PAYLOAD", "x-id": "PutObject" },
            expiresInSeconds,
            now: NOW,
          });
          assertSameUrl(actual, expected, what);
          compared++;
        }
      }
    } finally {
      client.destroy();
    }
  }
  assert.equal(compared, 45);
});

Deno.test("SigV4Presigner signs with the key of each new day", () => {
  const signer = new SigV4Presigner(CREDENTIALS, { region: "eu-west-1" });
  const sign = (now: Date) =>
    new URL(
      signer.presign({
        method: "PUT",
        origin: "https://h",
        path: "/b/k",
        expiresInSeconds: 60,
        now,
      }),
    );
  const first = sign(new Date("2024-05-06T23:59:59Z"));
  const second = sign(new Date("2024-05-07T00:00:00Z"));
  assert.match(first.searchParams.get("X-Amz-Credential")!, /\/20240506\/eu-west-1\/s3\//);
  assert.match(second.searchParams.get("X-Amz-Credential")!, /\/20240507\/eu-west-1\/s3\//);
  const again = sign(new Date("2024-05-06T23:59:59Z"));
  assert.equal(again.href, first.href);
});

Deno.test("SigV4Presigner refuses a lifetime beyond a week or below a second", () => {
  const signer = new SigV4Presigner(CREDENTIALS, { region: "us-east-1" });
  for (const expiresInSeconds of [0, -1, 1.5, 604_801, NaN]) {
    assert.throws(
      () => signer.presign({ method: "PUT", origin: "https://h", path: "/k", expiresInSeconds }),
      RangeError,
    );
  }
  assert.ok(
    signer.presign({ method: "PUT", origin: "https://h", path: "/k", expiresInSeconds: 604_800 }),
  );
});

Deno.test("uriEncodePath encodes each key segment as S3 does and keeps the slashes", () => {
  assert.equal(
    uriEncodePath("org/o1/experiments/e-1_x.y~z/latest.csv"),
    "org/o1/experiments/e-1_x.y~z/latest.csv",
  );
  assert.equal(uriEncodePath("a b/ü+(1)*!'/x"), "a%20b/%C3%BC%2B%281%29%2A%21%27/x");
  assert.equal(uriEncodePath("/lead//double/"), "/lead//double/");
  assert.equal(uriEncode("a/b=c&d%"), "a%2Fb%3Dc%26d%25");
});

/** The instant an `X-Amz-Date` (`20240506T070809Z`) names. */
function amzDateTime(url: string): Date {
  const date = new URL(url).searchParams.get("X-Amz-Date") ?? "";
  const iso = date.replace(/^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/, "$1-$2-$3T$4:$5:$6Z");
  const time = new Date(iso);
  assert.ok(!Number.isNaN(time.getTime()), `bad X-Amz-Date in ${url}`);
  return time;
}

function storeCases(): S3StoreOptions[] {
  const cases: S3StoreOptions[] = [];
  for (
    const endpoint of [
      undefined,
      "http://127.0.0.1:9000",
      "https://minio.example.test",
      "https://gateway.example.test:8443/s3/",
    ]
  ) {
    for (const publicEndpoint of [undefined, "https://storage.example.test:9000"]) {
      for (const forcePathStyle of [true, false]) {
        for (const region of ["us-east-1", "eu-west-1", "cn-north-1"]) {
          for (const bucket of ["abn-data", "abn.data"]) {
            // The SDK itself cannot sign this one: it makes the dotted bucket a subdomain of the IP.
            const sdkFails = endpoint?.startsWith("http://127.") && publicEndpoint === undefined &&
              !forcePathStyle && bucket.includes(".");
            if (sdkFails) continue;
            cases.push({
              endpoint,
              publicEndpoint,
              region,
              bucket,
              ...CREDENTIALS,
              forcePathStyle,
              createBucket: false,
            });
          }
        }
      }
    }
  }
  return cases;
}

Deno.test("S3Store presignPut answers the URL the SDK signs for the same instant", async () => {
  const cases = storeCases();
  assert.equal(cases.length, 93);
  const sdk = countSdkPresigns();
  let sdkCalls = 0;
  try {
    for (const options of cases) {
      const store = new S3Store(options);
      const endpoint = options.publicEndpoint ?? options.endpoint;
      const client = sdkClient(options.region, endpoint, options.forcePathStyle, CREDENTIALS);
      sdkCalls += 2; // the store's one check of its signer
      try {
        for (const key of KEYS) {
          for (const contentLength of [undefined, 42]) {
            const what = JSON.stringify({ ...options, key, contentLength });
            const url = await store.presignPut(key, { expiresInSeconds: 900, contentLength });
            const expected = await sdkPresignPut(client, options.bucket, key, {
              expiresInSeconds: 900,
              contentLength,
              signingDate: amzDateTime(url),
            });
            sdkCalls++;
            assertSameUrl(url, expected, what);
          }
        }
        // Signed directly, not by the SDK.
        assert.equal(sdk.count, sdkCalls, JSON.stringify(options));
      } finally {
        client.destroy();
        await store.close();
      }
    }
  } finally {
    sdk.restore();
  }
});

Deno.test("S3Store presignPut uses the SDK only to check its signer, once per store", async () => {
  const sdk = countSdkPresigns();
  const store = new S3Store({
    endpoint: "http://127.0.0.1:9000",
    region: "us-east-1",
    bucket: "abn-data",
    ...CREDENTIALS,
    forcePathStyle: true,
    createBucket: false,
  });
  try {
    const urls = await Promise.all(
      KEYS.map((key) => store.presignPut(key, { expiresInSeconds: 60, contentLength: 7 })),
    );
    for (let i = 0; i < 50; i++) await store.presignPut(KEYS[0], { expiresInSeconds: 60 });
    assert.equal(sdk.count, 2);
    assert.equal(new URL(urls[0]).pathname, `/abn-data/${KEYS[0]}`);
  } finally {
    sdk.restore();
    await store.close();
  }
});

Deno.test("S3Store presignPut signs with the SDK when credentials come from its provider chain", async () => {
  const variables = {
    AWS_ACCESS_KEY_ID: "ASIAENVEXAMPLE",
    AWS_SECRET_ACCESS_KEY: "env/secret",
    AWS_SESSION_TOKEN: "env-session-token",
  };
  const saved = Object.keys(variables).map((name) => [name, Deno.env.get(name)] as const);
  for (const [name, value] of Object.entries(variables)) Deno.env.set(name, value);
  const sdk = countSdkPresigns();
  const store = new S3Store({
    endpoint: "http://127.0.0.1:9000",
    region: "eu-west-1",
    bucket: "abn-data",
    forcePathStyle: true,
    createBucket: false,
  });
  try {
    for (let i = 0; i < 3; i++) {
      const url = new URL(await store.presignPut(KEYS[0], { expiresInSeconds: 60 }));
      assert.equal(url.searchParams.get("X-Amz-Security-Token"), "env-session-token");
      assert.match(url.searchParams.get("X-Amz-Credential")!, /^ASIAENVEXAMPLE\//);
    }
    assert.equal(sdk.count, 3);
  } finally {
    sdk.restore();
    await store.close();
    for (const [name, value] of saved) {
      if (value === undefined) Deno.env.delete(name);
      else Deno.env.set(name, value);
    }
  }
});

Deno.test("S3Store presignPut fails with StorageError for a lifetime beyond a week", async () => {
  const store = new S3Store({
    region: "us-east-1",
    bucket: "abn-data",
    ...CREDENTIALS,
    forcePathStyle: false,
    createBucket: false,
  });
  try {
    await assert.rejects(
      store.presignPut(KEYS[0], { expiresInSeconds: 604_801 }),
      (error) => error instanceof StorageError && /cannot sign an upload URL/.test(error.message),
    );
    assert.ok(await store.presignPut(KEYS[0], { expiresInSeconds: 604_800 }));
  } finally {
    await store.close();
  }
});
