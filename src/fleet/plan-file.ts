/**
 * The plan a campaign expands to, kept in the results directory as
 * `campaign.json` (written atomically, read back strictly). A task command
 * finds what it runs here, by its name; `campaign run` again compares the
 * plan it expands with the one kept, so a results directory holds one
 * campaign's results only (CAMPAIGN_MISMATCH naming both plan digests).
 *
 * Read back, the plan is hostile like any file: every task's name is
 * recomputed from its identity model and the plan digest from the names, so
 * an edited plan cannot make a task run something other than its name says.
 */
import { join } from "node:path";
import {
  CAMPAIGN_LIMITS,
  CairnError,
  Checker,
  isJsonObject,
  parseJsonBytes,
  readFileBounded,
  sha256,
  writeFileAtomic,
  type JsonModel,
  type JsonObject,
  type Sha256Digest,
} from "../core/index.ts";
import type { TaskResources } from "./executor.ts";
import type { CampaignFile, CampaignMode } from "./campaign-file.ts";
import { planDigest, taskName, TASK_NAME_RE, type TaskIdentityModel } from "./task-identity.ts";
import { RESULTS } from "./results-dir.ts";
import { readLockPolicy, type LockPolicy } from "./lock-entry.ts";

/**
 * What a task runs: a spec variant (record), a recorded run directory, or a
 * replay bundle (a file, or `oci://HOST/REPO@sha256:…`) that the task imports
 * on its own node (replay, verify).
 */
export type TaskInput =
  | { readonly spec: string; readonly variant: JsonObject }
  | { readonly run: string }
  | { readonly bundle: string }
  /** An environment lockfile and its policy (lock-entry.ts): the task reads the policy here, never from its argv. */
  | { readonly lock: string; readonly policy: LockPolicy }
  /** A branch (mode branch): the parent run directory, its checkpoint, the tail as a model (its bytes are `JSON + "\n"`), the served directory. */
  | { readonly parent: string; readonly at: string; readonly tail: JsonObject; readonly served: string | null };

/** The bytes a branch task's tail is kept as (branch.json), and named by (`tail` in its identity). */
export function tailBytes(tail: JsonObject): Buffer {
  return Buffer.from(`${JSON.stringify(tail)}\n`, "utf8");
}

export interface PlannedTask {
  readonly id: string;
  readonly identity: TaskIdentityModel;
  readonly input: TaskInput;
  /** Index of the `runs:` entry, the matrix values (null without a matrix), the repeat index. */
  readonly origin: { readonly run: number; readonly point: readonly JsonModel[] | null; readonly repeat: number };
}

export interface Collapsed {
  readonly run: number;
  readonly point: readonly JsonModel[] | null;
  readonly repeat: number;
  readonly same_as: string;
}

export interface Expansion {
  readonly tasks: readonly PlannedTask[];
  readonly collapsed: readonly Collapsed[];
}

export const PLAN_SCHEMA = "cairn.campaign-plan/1";

export interface Plan {
  readonly plan: Sha256Digest;
  readonly mode: CampaignMode;
  readonly resources: TaskResources;
  readonly retries: number;
  readonly file: { readonly path: string; readonly sha256: Sha256Digest };
  readonly tasks: readonly PlannedTask[];
  readonly collapsed: readonly Collapsed[];
}

function resourcesJsonModel(r: TaskResources) {
  return { cpus: r.cpus, "memory-mib": r.memoryMiB, "time-minutes": r.timeMinutes };
}

export function makePlan(file: CampaignFile, expansion: Expansion): Plan {
  const digest = planDigest({ mode: file.mode, resources: resourcesJsonModel(file.resources), retries: file.retries, tasks: expansion.tasks.map((t) => t.id) });
  return {
    plan: digest,
    mode: file.mode,
    resources: file.resources,
    retries: file.retries,
    file: { path: file.path, sha256: sha256(file.bytes) },
    tasks: expansion.tasks,
    collapsed: expansion.collapsed,
  };
}

export function encodePlan(p: Plan): string {
  return `${JSON.stringify(
    {
      schema: PLAN_SCHEMA,
      plan: p.plan,
      mode: p.mode,
      resources: resourcesJsonModel(p.resources),
      retries: p.retries,
      file: p.file,
      tasks: p.tasks,
      collapsed: p.collapsed,
    },
    null,
    1,
  )}\n`;
}

export function writePlan(dir: string, p: Plan): void {
  writeFileAtomic(join(dir, RESULTS.plan), encodePlan(p), { mode: 0o600 });
}

/** The plan kept in `dir`, or undefined when there is none yet. */
export function readPlan(dir: string): Plan | undefined {
  const file = join(dir, RESULTS.plan);
  let bytes: Buffer;
  try {
    bytes = readFileBounded(file, CAMPAIGN_LIMITS["campaign.plan-bytes"], "campaign.plan-bytes", { missing: "IO_ERROR", notRegular: "ROOT_UNSAFE" });
  } catch (e) {
    if (e instanceof CairnError && e.code === "IO_ERROR" && /does not exist/.test(e.message)) return undefined;
    throw e;
  }
  return parsePlan(parseJsonBytes(bytes, { source: file }), file);
}

function parsePlan(model: JsonModel, file: string): Plan {
  const c = new Checker("CAMPAIGN_INVALID");
  const o = c.object(model, "", ["schema", "plan", "mode", "resources", "retries", "file", "tasks", "collapsed"]) ?? (Object.create(null) as JsonObject);
  if (c.requiredString(o, "schema", "") !== PLAN_SCHEMA) c.add("/schema", `expected ${PLAN_SCHEMA}`);
  const digest = c.requiredString(o, "plan", "", { pattern: /^sha256:[0-9a-f]{64}$/ });
  const mode = c.requiredString(o, "mode", "");
  if (mode !== undefined && !["record", "replay", "verify", "branch"].includes(mode)) c.add("/mode", "expected record, replay, verify or branch");
  const r = c.object(c.required(o, "resources", ""), "/resources", ["cpus", "memory-mib", "time-minutes"]) ?? (Object.create(null) as JsonObject);
  const n = (k: string) => c.integer(c.required(r, k, "/resources"), `/resources/${k}`, { min: 1 }) ?? 1;
  const resources: TaskResources = { cpus: n("cpus"), memoryMiB: n("memory-mib"), timeMinutes: n("time-minutes") };
  const retries = c.integer(c.required(o, "retries", ""), "/retries", { min: 0, max: CAMPAIGN_LIMITS["campaign.retries"] }) ?? 0;
  const f = c.object(c.required(o, "file", ""), "/file", ["path", "sha256"]) ?? (Object.create(null) as JsonObject);
  const fpath = c.requiredString(f, "path", "/file") ?? "";
  const fsha = (c.requiredString(f, "sha256", "/file", { pattern: /^sha256:[0-9a-f]{64}$/ }) ?? "") as Sha256Digest;
  const tasks: PlannedTask[] = [];
  const list = c.array(c.required(o, "tasks", ""), "/tasks") ?? [];
  list.forEach((t, i) => {
    const at = `/tasks/${i}`;
    const to = c.object(t, at, ["id", "identity", "input", "origin"]);
    if (to === undefined) return;
    const id = c.requiredString(to, "id", at, { pattern: TASK_NAME_RE });
    const identity = c.object(c.required(to, "identity", at), `${at}/identity`);
    const input = c.object(c.required(to, "input", at), `${at}/input`, [
      "spec",
      "variant",
      "run",
      "bundle",
      "lock",
      "policy",
      "parent",
      "at",
      "tail",
      "served",
    ]);
    const origin = c.object(c.required(to, "origin", at), `${at}/origin`, ["run", "point", "repeat"]);
    if (id === undefined || identity === undefined || input === undefined || origin === undefined) return;
    let name: string | undefined;
    try {
      name = taskName(identity as unknown as TaskIdentityModel);
    } catch {
      c.add(`${at}/identity`, "is not a plain model");
    }
    if (name !== undefined && name !== id) c.add(`${at}/id`, "is not the name of the task's identity (the plan was edited)");
    let ti: TaskInput | undefined;
    if (typeof input.run === "string" && Object.keys(input).length === 1) ti = { run: input.run };
    else if (typeof input.bundle === "string" && Object.keys(input).length === 1) ti = { bundle: input.bundle };
    else if (typeof input.spec === "string" && isJsonObject(input.variant) && Object.keys(input).length === 2)
      ti = { spec: input.spec, variant: input.variant };
    else if (typeof input.lock === "string" && isJsonObject(input.policy) && Object.keys(input).length === 2) {
      // kept whole by the plan: every field present, paths already absolute (a relative one would resolve against "/")
      const p = c.object(input.policy, `${at}/input/policy`, ["pub", "registry", "base", "cmd", "user", "workdir"]);
      const policy = p !== undefined ? readLockPolicy(c, p, `${at}/input/policy`, "/") : undefined;
      if (p !== undefined && (!Object.hasOwn(p, "user") || !Object.hasOwn(p, "workdir"))) c.add(`${at}/input/policy`, "must name user and workdir");
      if (policy !== undefined) ti = { lock: input.lock, policy };
    } else if (
      typeof input.parent === "string" &&
      typeof input.at === "string" &&
      isJsonObject(input.tail) &&
      (input.served === null || typeof input.served === "string") &&
      Object.keys(input).length === 4
    ) {
      ti = { parent: input.parent, at: input.at, tail: input.tail, served: input.served };
      // the task records exactly the tail and checkpoint its name covers
      if (identity.tail !== sha256(tailBytes(input.tail)) || identity.checkpoint !== input.at)
        c.add(`${at}/input/tail`, "its tail or checkpoint is not the one the task's name covers");
    } else c.add(`${at}/input`, "expected {run}, {bundle}, {spec, variant}, {lock, policy} or {parent, at, tail, served}");
    if (ti !== undefined && ("parent" in ti ? identity.mode !== "branch" : ("spec" in ti || "lock" in ti) === (identity.mode !== "record")))
      c.add(`${at}/input`, "does not fit the task's mode");
    if (ti !== undefined && "lock" in ti && identity.run !== null) c.add(`${at}/input`, "a lock task has no run section");
    if (ti !== undefined && "spec" in ti && JSON.stringify(ti.variant.run ?? null) !== JSON.stringify(identity.run))
      c.add(`${at}/input/variant`, "its run section is not the one the task's name covers");
    const point = origin.point === null ? null : Array.isArray(origin.point) ? origin.point : undefined;
    if (ti !== undefined && point !== undefined && typeof origin.run === "number" && typeof origin.repeat === "number")
      tasks.push({ id, identity: identity as unknown as TaskIdentityModel, input: ti, origin: { run: origin.run, point, repeat: origin.repeat } });
    else c.add(`${at}/origin`, "expected {run, point, repeat}");
  });
  const collapsed = (c.array(c.required(o, "collapsed", ""), "/collapsed") ?? []) as unknown as Collapsed[];
  c.done(`invalid ${file}`, "the results directory's plan was edited or is not cairn's; give --out a new directory");
  const recomputed = planDigest({ mode: mode!, resources: resourcesJsonModel(resources), retries, tasks: tasks.map((t) => t.id) });
  if (recomputed !== digest)
    throw new CairnError("CAMPAIGN_INVALID", `invalid ${file}: its plan digest is not the digest of its tasks (the plan was edited)`, { path: "/plan" });
  return { plan: recomputed, mode: mode as CampaignMode, resources, retries, file: { path: fpath, sha256: fsha }, tasks, collapsed };
}
