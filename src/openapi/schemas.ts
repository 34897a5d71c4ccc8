/**
 * The JSON bodies of the API as JSON Schema 2020-12 (`components.schemas` of the OpenAPI
 * document), written from docs/api.md. Objects the analysis may grow ("more fields are welcome")
 * allow further properties; the others do not, so a field added to an answer is added here too.
 *
 * @module
 */
import { EVENT_TYPES } from "../webhooks/events.ts";
import type { Schema } from "./types.ts";

/** `#/components/schemas/{name}`. */
export function ref(name: string): Schema {
  return { $ref: `#/components/schemas/${name}` };
}

const string: Schema = { type: "string" };
const nullableString: Schema = { type: ["string", "null"] };
const integer: Schema = { type: "integer", minimum: 0 };
const number: Schema = { type: "number" };
const nullableNumber: Schema = { type: ["number", "null"] };
const probability: Schema = { type: "number", minimum: 0, maximum: 1 };
const nullableProbability: Schema = { type: ["number", "null"], minimum: 0, maximum: 1 };
const time: Schema = { type: "string", format: "date-time" };
const nullableTime: Schema = { type: ["string", "null"], format: "date-time" };
const date: Schema = { type: "string", format: "date" };
const SCOPE_LIST: Schema = {
  type: "array",
  items: { enum: ["upload", "read", "write", "admin"] },
  uniqueItems: true,
};
const interval: Schema = {
  type: ["array", "null"],
  items: number,
  minItems: 2,
  maxItems: 2,
  description: "[low, high]; null when there is no comparison",
};

/** An object of exactly these properties, all required unless listed in `optional`. */
function object(
  properties: Record<string, Schema>,
  { optional = [], open = false, description }: {
    optional?: string[];
    open?: boolean;
    description?: string;
  } = {},
): Schema {
  return {
    type: "object",
    ...(description ? { description } : {}),
    required: Object.keys(properties).filter((name) => !optional.includes(name)),
    properties,
    additionalProperties: open,
  };
}

/** Spec 2.2, and no id made only of dots. */
export const EXPERIMENT_ID: Schema = {
  type: "string",
  minLength: 1,
  maxLength: 128,
  pattern: "^[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*$",
  description:
    "1 to 128 of A-Z a-z 0-9 . _ - (not only dots); anything else answers 400 invalid_experiment_id",
};

const variantUsers = object({ name: string, users: integer });

const comparison = object({
  name: string,
  lift: nullableNumber,
  lift_se: nullableNumber,
  ci: interval,
  p_value: nullableProbability,
  p_value_adjusted: nullableProbability,
  sequential_ci: interval,
  sequential_p_value: nullableProbability,
  cuped: {
    type: ["object", "null"],
    required: ["covariate", "theta", "variance_reduction"],
    properties: { covariate: string, theta: number, variance_reduction: number },
    additionalProperties: false,
  },
  chance_to_beat_control: nullableProbability,
  decision: {
    type: ["string", "null"],
    enum: ["better", "worse", "inconclusive", "too_early", null],
    description: "key metric only",
  },
}, { optional: ["chance_to_beat_control", "decision"], open: true });

const metric = object({
  name: string,
  kind: { enum: ["conversion", "numeric"] },
  covariate: nullableString,
  winsorized: {
    type: ["object", "null"],
    required: ["percentile", "cap"],
    properties: { percentile: number, cap: number },
    additionalProperties: false,
  },
  lower_is_better: { type: "boolean" },
  variants: {
    type: "array",
    items: object({
      name: string,
      users: integer,
      mean: nullableNumber,
      variance: nullableNumber,
      conversions: number,
    }, { optional: ["conversions"], open: true }),
  },
  comparisons: { type: "array", items: comparison },
}, { optional: ["covariate", "winsorized", "lower_is_better", "comparisons"], open: true });

const srm = object({
  chi_square: number,
  p_value: probability,
  mismatch: { type: "boolean" },
  enough_data: { type: "boolean" },
  expected_split: { type: "object", additionalProperties: number },
}, { open: true });

const dimension = object({
  name: string,
  distinct_values: integer,
  skipped: { type: "boolean" },
  threshold: number,
  inconsistent_users: integer,
  key_metric: nullableString,
  values: {
    type: "array",
    items: object({
      value: string,
      pooled_values: { type: "array", items: string },
      users: integer,
      variants: { type: "array", items: { type: "object" } },
      srm: { type: "object" },
      key_metric: { type: "array", items: { type: "object" } },
    }, { optional: ["pooled_values"], open: true }),
  },
}, { optional: ["threshold", "inconsistent_users", "key_metric", "values"], open: true });

const changes: Schema = {
  ...object({
    previous_etag: string,
    previous_delivered_at: string,
    rows_added: { type: "integer" },
    users_added: integer,
    users_switched_variant: integer,
    users_vanished: integer,
    restated_dates: { type: "array", items: date },
    provisional_date: { type: ["string", "null"], format: "date" },
  }, { open: true }),
  type: ["object", "null"],
  description: "what changed since the previous delivery; null on the first one",
};

const nullableArray = (items: Schema): Schema => ({ type: ["array", "null"], items });
const nullableObject = (schema: Schema): Schema => ({ ...schema, type: ["object", "null"] });

/** The analysis settings (docs/api.md, "Settings"). */
const SETTINGS_FIELDS: Record<string, Schema> = {
  key_metric: { type: "string", minLength: 1 },
  control: { type: "string", minLength: 1 },
  expected_split: {
    type: "object",
    minProperties: 1,
    additionalProperties: { type: "number", exclusiveMinimum: 0 },
    description: "variant → share; the shares sum to 1 (± 1e-9) and name exactly the variants",
  },
  mde: { type: "number", exclusiveMinimum: 0, maximum: 10 },
  alpha: { type: "number", minimum: 1e-10, exclusiveMaximum: 1 },
  power: { type: "number", exclusiveMinimum: 0, exclusiveMaximum: 1 },
  target_users_per_variant: { type: "integer", minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
  metric_kinds: { type: "object", additionalProperties: { enum: ["conversion", "numeric"] } },
  inference: { enum: ["sequential", "frequentist", "bayesian"] },
  sequential_tuning: { type: "number", minimum: 1 },
  covariates: { type: "object", additionalProperties: { type: "string", minLength: 1 } },
  winsorize: {
    type: "object",
    additionalProperties: { type: "number", exclusiveMinimum: 0.5, exclusiveMaximum: 1 },
  },
  lower_is_better: { type: "array", items: { type: "string", minLength: 1 } },
  min_users_per_variant: { type: "integer", minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
  min_days: { type: "integer", minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
};

const WEBHOOK_EVENTS: Schema = {
  type: "array",
  minItems: 1,
  uniqueItems: true,
  items: { enum: ["*", ...EVENT_TYPES] },
  description: 'the events the endpoint receives; ["*"]: all',
};

const WEBHOOK_ENDPOINT: Schema = object({
  webhook_id: string,
  url: string,
  description: string,
  events: WEBHOOK_EVENTS,
  enabled: { type: "boolean" },
  disabled_reason: nullableString,
  consecutive_failures: integer,
  created_at: time,
  updated_at: time,
  previous_secret_until: nullableTime,
});

const WEBHOOK_DELIVERY: Schema = object({
  delivery_id: string,
  event_id: string,
  type: string,
  state: { enum: ["pending", "delivered", "failed"] },
  attempts: integer,
  last_status: { type: ["integer", "null"] },
  last_error: nullableString,
  next_attempt_at: nullableTime,
  created_at: time,
  finished_at: nullableTime,
});

export const SCHEMAS: Record<string, Schema> = {
  Error: object({
    error: object({
      code: { type: "string", description: "stable, for programs (docs/api.md, Error codes)" },
      message: { type: "string", description: "a sentence for people; its wording may change" },
      request_id: { type: "string", description: "equals the X-Request-Id header" },
    }),
  }),
  UploadResult: object({
    success: { const: true },
    size_mb: { type: "number", minimum: 0, description: "size_bytes / 1048576" },
    experiment_id: EXPERIMENT_ID,
    message: string,
    size_bytes: integer,
    rows: integer,
    sha256: { type: "string", pattern: "^[0-9a-f]{64}$" },
    etag: string,
  }),
  InitiateRequest: object({
    experiment_id: EXPERIMENT_ID,
    size_bytes: {
      type: ["integer", "null"],
      minimum: 0,
      description: "the file's exact length; the URL then accepts only that length",
    },
  }, {
    optional: ["size_bytes"],
    open: true,
    description: "Other fields are ignored",
  }),
  UploadGrant: object({
    upload_url: { type: "string", format: "uri" },
    bucket: { type: "string", description: '"local" with local storage' },
    key: { type: "string", pattern: "^org/[^/]+/experiments/[^/]+/latest\\.csv$" },
    experiment_id: EXPERIMENT_ID,
    expires_in: { type: "integer", minimum: 1 },
    method: { const: "PUT" },
    headers: object({ "Content-Type": { const: "text/csv" } }),
  }),
  DatasetSummary: object({
    experiment_id: EXPERIMENT_ID,
    size_bytes: integer,
    size_mb: { type: "number", minimum: 0 },
    updated_at: time,
    etag: string,
    analysis_status: { enum: ["pending", "ready", "failed", "too_large"] },
  }),
  DatasetList: object({
    datasets: { type: "array", items: ref("DatasetSummary") },
    next_cursor: nullableString,
  }),
  Dataset: {
    ...object({
      experiment_id: EXPERIMENT_ID,
      size_bytes: integer,
      size_mb: { type: "number", minimum: 0 },
      updated_at: time,
      etag: string,
      analysis_status: { enum: ["pending", "ready", "failed", "too_large"] },
      key: string,
    }),
  },
  DatasetDeleted: object({ deleted: { const: true }, experiment_id: EXPERIMENT_ID }),
  Analysis: object({
    experiment_id: EXPERIMENT_ID,
    status: { enum: ["pending", "ready", "failed"] },
    error: nullableString,
    dataset: object({
      size_bytes: integer,
      size_mb: { type: "number", minimum: 0 },
      rows: { type: ["integer", "null"], minimum: 0 },
      etag: string,
      delivered_at: time,
      columns: nullableArray(
        object({ name: string, kind: { enum: ["conversion", "numeric", "dimension"] } }),
      ),
    }, { open: true }),
    analysis_version: { type: "integer", minimum: 1 },
    control: nullableString,
    key_metric: nullableString,
    inference: { enum: ["sequential", "frequentist", "bayesian"] },
    confidence_level: probability,
    variants: nullableArray(variantUsers),
    srm: nullableObject(srm),
    sample: nullableObject(
      object({
        total_users: integer,
        target_users_per_variant: { type: ["integer", "null"] },
        target_users: { type: ["integer", "null"] },
        percent_of_target: nullableNumber,
        users_per_day: nullableNumber,
        days_left: { type: ["integer", "null"] },
        days: integer,
      }, { optional: ["users_per_day", "days_left", "days"], open: true }),
    ),
    too_early: { type: "boolean" },
    metrics: nullableArray(metric),
    win_probability: nullableObject(object({
      metric: nullableString,
      variants: {
        type: "array",
        items: object({
          name: string,
          chance_to_beat_control: nullableProbability,
          chance_to_be_best: nullableProbability,
          lift: nullableNumber,
          lift_ci95: interval,
        }, { optional: ["lift", "lift_ci95"], open: true }),
      },
    }, { open: true })),
    daily: nullableArray(object({
      date,
      rows: integer,
      provisional: { const: true },
      variants: {
        type: "array",
        items: object({ name: string, cumulative_users: integer, mean: nullableNumber }, {
          open: true,
        }),
      },
    }, { optional: ["rows", "provisional"], open: true })),
    dimensions: nullableArray(dimension),
    changes,
    warnings: { type: "array", items: string },
    analysed_at: nullableTime,
  }, {
    optional: ["analysis_version", "inference", "confidence_level", "too_early"],
    open: true,
    description:
      "Until the analysis is ready, the figures are null (and analysis_version, inference, confidence_level and too_early absent)",
  }),
  Settings: object(SETTINGS_FIELDS, {
    optional: Object.keys(SETTINGS_FIELDS),
    description:
      "What was saved: every field optional (left out: its default); names of variants and columns are checked against the stored dataset",
  }),
  SettingsInput: object(
    Object.fromEntries(
      Object.entries(SETTINGS_FIELDS).map(([name, schema]) => [
        name,
        { anyOf: [schema, { type: "null" }] },
      ]),
    ),
    {
      optional: Object.keys(SETTINGS_FIELDS),
      description:
        "The settings to save, replacing the saved ones; a field set to null is left out. An unknown field is refused.",
    },
  ),
  HistoryPage: object({
    snapshots: {
      type: "array",
      items: object({
        etag: string,
        delivered_at: time,
        analysed_at: time,
        rows: integer,
        control: nullableString,
        key_metric: nullableString,
        variants: { type: "array", items: variantUsers },
        srm_p_value: probability,
        metrics: {
          type: "array",
          items: object({
            name: string,
            comparisons: {
              type: "array",
              items: object({
                name: string,
                lift: nullableNumber,
                ci: interval,
                sequential_ci: interval,
                p_value: nullableProbability,
                chance_to_beat_control: nullableProbability,
                decision: nullableString,
              }, { optional: ["decision"], open: true }),
            },
          }, { open: true }),
        },
        changes,
      }, { open: true }),
    },
    next_cursor: nullableString,
  }),
  Keys: object({
    organization: {
      type: ["object", "null"],
      required: ["org_id", "name", "active", "created_at"],
      properties: { org_id: string, name: string, active: { type: "boolean" }, created_at: time },
      additionalProperties: false,
    },
    current_key_id: string,
    keys: {
      type: "array",
      items: object({
        key_id: string,
        name: nullableString,
        prefix: { type: "string", pattern: "^abn_" },
        scopes: SCOPE_LIST,
        status: { enum: ["active", "revoked", "expired"] },
        created_at: time,
        expires_at: nullableTime,
        last_used_at: nullableTime,
        revoked_at: nullableTime,
      }),
    },
  }),
  KeyRequest: object({
    name: { type: ["string", "null"], maxLength: 100 },
    scopes: { ...SCOPE_LIST, minItems: 1 },
    expires_at: {
      ...nullableTime,
      description: "ISO-8601 with a zone, in the future; null: never",
    },
  }, { optional: ["name", "expires_at"] }),
  RotateRequest: object({
    overlap_hours: {
      type: ["number", "null"],
      minimum: 0,
      maximum: 168,
      description: "hours the old key keeps working (a fraction too); left out or null: 24",
    },
  }, { optional: ["overlap_hours"] }),
  NewKey: object({
    api_key: { type: "string", pattern: "^abn_" },
    key_id: string,
    name: nullableString,
    scopes: SCOPE_LIST,
    expires_at: nullableTime,
  }),
  AuditPage: object({
    events: {
      type: "array",
      items: object({
        id: string,
        at: time,
        action: string,
        key_id: nullableString,
        experiment_id: nullableString,
        details: { type: "object" },
      }),
    },
    next_cursor: nullableString,
  }),
  WebhookRequest: object({
    url: { type: "string", format: "uri", description: "http or https; no credentials" },
    events: WEBHOOK_EVENTS,
    description: { type: "string", maxLength: 500 },
  }, { optional: ["description"] }),
  WebhookPatch: object({
    url: { type: "string", format: "uri" },
    events: WEBHOOK_EVENTS,
    enabled: { type: "boolean" },
    description: { type: "string", maxLength: 500 },
  }, { optional: ["url", "events", "enabled", "description"] }),
  WebhookEndpoint: WEBHOOK_ENDPOINT,
  NewWebhook: {
    ...WEBHOOK_ENDPOINT,
    required: [...(WEBHOOK_ENDPOINT.required as string[]), "secret"],
    properties: {
      ...(WEBHOOK_ENDPOINT.properties as Record<string, Schema>),
      secret: { type: "string", pattern: "^whsec_" },
    },
  },
  WebhookList: object({ webhooks: { type: "array", items: WEBHOOK_ENDPOINT } }),
  WebhookSecret: object({
    webhook_id: string,
    secret: { type: "string", pattern: "^whsec_" },
    previous_secret_until: nullableTime,
  }),
  WebhookDelivery: WEBHOOK_DELIVERY,
  WebhookDeliveries: object({
    deliveries: { type: "array", items: WEBHOOK_DELIVERY },
    next_cursor: nullableString,
  }),
  StorageEvents: {
    type: "object",
    description:
      'An S3 event notification, {"Records": [{"s3": {"object": {"key": "…"}}}]} (keys URL-encoded, + for a space). Each record whose key is a dataset key of an existing object within the limit is a delivery; any other record, or anything else in the object, is ignored.',
    properties: { Records: { description: "The notification's records" } },
  },
  StorageEventsResult: object({ accepted: integer }),
  Health: object({ status: { const: "ok" } }),
};
