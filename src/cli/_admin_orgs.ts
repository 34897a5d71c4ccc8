/** `admin org …`: create, activate or deactivate, list, and set an organization's storage quota. */
import { type AdminCall, USAGE, UsageError } from "./_admin_args.ts";

/** `org create NAME` */
export async function orgCreate({ db, need, asJson, io }: AdminCall): Promise<number> {
  const org = await db.orgs.create(need("NAME"));
  io.out(asJson ? JSON.stringify({ org_id: org.id, name: org.name }) : org.id);
  return 0;
}

/** `org activate ORG_ID` and `org deactivate ORG_ID` */
export async function orgSetActive({ db, action, need, asJson, io }: AdminCall): Promise<number> {
  const id = need("ORG_ID");
  if (!(await db.orgs.setActive(id, action === "activate"))) {
    io.err(`No organization ${id}`);
    return 1;
  }
  io.out(
    asJson ? JSON.stringify({ org_id: id, active: action === "activate" }) : `${id} ${action}d`,
  );
  return 0;
}

/** `org list` */
export async function orgList({ db, asJson, io }: AdminCall): Promise<number> {
  const orgs = await db.orgs.list();
  if (asJson) {
    io.out(JSON.stringify(orgs.map((o) => ({ org_id: o.id, ...o, id: undefined }))));
  } else {
    for (const o of orgs) {
      io.out(`${o.id}\t${o.active ? "active" : "deactivated"}\t${o.created_at}\t${o.name}`);
    }
  }
  return 0;
}

/** `org set-quota ORG_ID BYTES|none` */
export async function orgSetQuota({ db, need, value, asJson, io }: AdminCall): Promise<number> {
  const id = need("ORG_ID");
  const quota = parseQuota(value);
  if (!(await db.orgs.setQuota(id, quota))) {
    io.err(`No organization ${id}`);
    return 1;
  }
  io.out(
    asJson
      ? JSON.stringify({ org_id: id, quota_bytes: quota })
      : quota === null
      ? `${id} quota none (ABN_ORG_QUOTA_BYTES applies)`
      : `${id} quota ${quota} bytes`,
  );
  return 0;
}

/** `BYTES` (a whole number) or `none` of `org set-quota`. */
function parseQuota(value: string | undefined): number | null {
  if (value === "none") return null;
  if (value !== undefined && /^\d+$/.test(value) && Number.isSafeInteger(Number(value))) {
    return Number(value);
  }
  throw new UsageError(
    `${
      value === undefined ? "missing BYTES" : `Invalid quota ${JSON.stringify(value)}`
    }: expected a whole number of bytes or none\n${USAGE}`,
  );
}
