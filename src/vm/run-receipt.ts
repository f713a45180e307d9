/**
 * Signed run receipts: an in-toto Statement v1 in a DSSE envelope (the form
 * sigstore and SLSA tooling read), signed with cairn's Ed25519 DSSE code.
 * This is the single definition of what a receipt binds.
 *
 *   subject    [{name: "outcome", digest: {sha256}}]: the run's outcome digest
 *   predicateType  https://cairn.dev/run/v1
 *   predicate  run_id, status, the sha256 of run.json, events.json and
 *              assertions.json, the workload identities, the environment
 *              (EnvironmentID, lockfile and image manifest digests) when the
 *              run came from an environment lockfile, the VM identity digest
 *              and QEMU version, the replay log's sha256 and size, and the
 *              cost: deterministic units (guest image bytes, output bytes per
 *              stream) and, labelled non-deterministic, QEMU's wall time and
 *              host CPU time.
 *
 * File digests are computed from the run directory's files, never copied
 * from what run.json claims (the replay log is hashed, not read from
 * run.json); identities come from run.json, whose own sha256 is bound. So
 * `verifyReceipt` with a run directory recomputes the statement and names
 * the first field that differs. Guest instructions come from the replay
 * log's instruction records (replay-log.ts): exact for this record (every
 * replay executes them), null when the log is not one cairn frames exactly.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import {
  CairnError,
  Checker,
  compareBytes,
  isJsonObject,
  parseEnvelope,
  parseJsonBytes,
  readFileBounded,
  sha256,
  signEnvelope,
  verifyEnvelope,
  writeFileAtomic,
  type JsonModel,
  type Sha256Digest,
  type SigningKey,
  type VerifyingKey,
} from "../core/index.ts";
import { sourceIdentity } from "../workload/index.ts";
import { readRunManifest, RUN_READ_LIMITS } from "./replay-run.ts";
import { guestInstructions } from "./replay-log.ts";
import { RUN_FILES } from "./rundir.ts";
import { outcomeDigest, runStatus, type AssertionResult } from "./checker.ts";
import type { NormalizedEvent } from "./protocol.ts";
import { readRunEnvManifest, RUN_COST_FILE, RUN_ENVIRONMENT_FILE, type RunEnvironment } from "./run-facts.ts";

export const IN_TOTO_STATEMENT_TYPE = "https://in-toto.io/Statement/v1";
export const RUN_PREDICATE_TYPE = "https://cairn.dev/run/v1";
/** The DSSE payload type in-toto attestations use. */
export const IN_TOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json";
export const RECEIPT_FILE = "receipt.dsse.json";
const SMALL_JSON_MAX = 64 * 1024;
/** receipt.max_bytes */
const RECEIPT_MAX_BYTES = 1024 * 1024;

/** The statement as a plain JSON model, in field order. */
export type ReceiptStatement = Record<string, unknown>;

function readJsonFile(runDir: string, name: string, max: number, limit: string): { bytes: Buffer; model: JsonModel } {
  const file = join(runDir, name);
  if (!existsSync(file)) throw new CairnError("RUN_INVALID", `the run directory has no ${name}`, { path: file });
  const bytes = readFileBounded(file, max, limit);
  return { bytes, model: parseJsonBytes(bytes, { source: file }) };
}

/** environment.json of a run recorded from an environment lockfile, strictly read; null when the run has none. */
export function readEnvironment(runDir: string): RunEnvironment | null {
  if (!existsSync(join(runDir, RUN_ENVIRONMENT_FILE))) return null;
  const { model } = readJsonFile(runDir, RUN_ENVIRONMENT_FILE, SMALL_JSON_MAX, "run.environment-bytes");
  const c = new Checker("RUN_INVALID");
  const o = c.object(model, "", ["environment_id", "lockfile_sha256", "image_manifest", "run_env"]) ?? {};
  const digest = (k: string): Sha256Digest => (c.string(c.required(o, k, ""), `/${k}`, { pattern: /^sha256:[0-9a-f]{64}$/ }) ?? "") as Sha256Digest;
  const runEnv = Object.hasOwn(o, "run_env") ? c.stringArray(o.run_env, "/run_env") : undefined;
  runEnv?.forEach((n, i) => {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(n) || (i > 0 && compareBytes(runEnv[i - 1]!, n) >= 0))
      c.add(`/run_env/${i}`, "must be variable names, sorted, each once");
  });
  const e: RunEnvironment = {
    environment_id: digest("environment_id"),
    lockfile_sha256: digest("lockfile_sha256"),
    image_manifest: digest("image_manifest"),
    ...(runEnv !== undefined ? { run_env: runEnv } : {}),
  };
  c.done(`invalid ${RUN_ENVIRONMENT_FILE}`);
  return e;
}

/** The record's cost.json (QEMU's wall time and host CPU time), each null when unknown; RUN_INVALID when malformed. */
export function readRunCost(runDir: string): { wall_ms: number | null; host_cpu_ms: number | null } {
  if (!existsSync(join(runDir, RUN_COST_FILE))) return { wall_ms: null, host_cpu_ms: null };
  const { model } = readJsonFile(runDir, RUN_COST_FILE, SMALL_JSON_MAX, "run.cost-bytes");
  const c = new Checker("RUN_INVALID");
  const o = c.object(model, "", ["wall_ms", "host_cpu_ms"]) ?? {};
  const n = (k: string): number | null => (o[k] === null ? null : (c.integer(c.required(o, k, ""), `/${k}`, { min: 0 }) ?? null));
  const cost = { wall_ms: n("wall_ms"), host_cpu_ms: n("host_cpu_ms") };
  c.done(`invalid ${RUN_COST_FILE}`);
  return cost;
}

/** Output bytes per stream, summed over every event that reports a stream's byte count. */
function outputBytes(events: JsonModel): { stdout: number; stderr: number } {
  const out = { stdout: 0, stderr: 0 };
  if (!Array.isArray(events)) throw new CairnError("RUN_INVALID", "events.json is not a list", { path: RUN_FILES.events });
  for (const e of events) {
    if (!isJsonObject(e)) continue;
    for (const s of ["stdout", "stderr"] as const) {
      const v = e[s];
      if (isJsonObject(v) && typeof v.bytes === "number") out[s] += v.bytes;
    }
  }
  return out;
}

/**
 * A receipt never signs a status its own files contradict: the outcome
 * digest (the receipt's subject) must be the digest of events.json and
 * assertions.json, and a status those lists decide (`passed`, `completed`,
 * `program-failed`, `assertions-failed`, `launch-failed`) must be the one
 * they give. `infrastructure-failure` and `timeout` also rest on what the
 * kernel said and how QEMU ended, which the lists do not hold, so they are
 * taken as recorded (saying one of them never claims more). Attack stopped:
 * run.json's status edited from `assertions-failed` to `passed` was signed.
 */
function checkStatusAgainstFiles(runDir: string): void {
  const m = readRunManifest(runDir);
  const events = readJsonFile(runDir, RUN_FILES.events, RUN_READ_LIMITS["run.recorded-list-bytes"], "run.recorded-list-bytes").model;
  const assertions = readJsonFile(runDir, RUN_FILES.assertions, RUN_READ_LIMITS["run.recorded-list-bytes"], "run.recorded-list-bytes").model;
  const edited = (path: string, message: string) => new CairnError("RUN_INVALID", message, { path, hint: "the run directory was edited" });
  if (!Array.isArray(events) || !Array.isArray(assertions)) throw edited("/outcome", "events.json and assertions.json must be lists");
  const ev = events as unknown as NormalizedEvent[];
  const as = assertions as unknown as AssertionResult[];
  if (outcomeDigest(ev, as) !== m.outcome) throw edited("/outcome", "the run's outcome digest is not the digest of its events.json and assertions.json");
  if (m.status === "infrastructure-failure" || m.status === "timeout") return;
  const derived = runStatus(ev, as);
  if (derived !== m.status) throw edited("/status", `run.json says ${m.status}, but its events and assertions say ${derived}`);
}

/** The statement a receipt of `runDir` carries, every value recomputed from the directory's files. */
export function receiptStatement(runDir: string): ReceiptStatement {
  const m = readRunManifest(runDir);
  const manifestBytes = readFileBounded(join(runDir, RUN_FILES.manifest), RUN_READ_LIMITS["run.manifest-bytes"], "run.manifest-bytes");
  const events = readJsonFile(runDir, RUN_FILES.events, RUN_READ_LIMITS["run.recorded-list-bytes"], "run.recorded-list-bytes");
  const assertions = readJsonFile(runDir, RUN_FILES.assertions, RUN_READ_LIMITS["run.recorded-list-bytes"], "run.recorded-list-bytes");
  const logPath = join(runDir, RUN_FILES.replayLog);
  if (!existsSync(logPath)) throw new CairnError("RUN_INVALID", "the run directory has no replay.log", { path: logPath });
  const log = readFileBounded(logPath, RUN_READ_LIMITS["run.replay-log-bytes"], "run.replay-log-bytes");
  const cost = readRunCost(runDir);
  const environment = readEnvironment(runDir);
  const envManifest = readRunEnvManifest(runDir);
  // the environment file is bound to the run: its image manifest must be the workload's source
  if (environment !== null && sourceIdentity({ kind: "oci", manifest: environment.image_manifest }) !== m.workload.source) {
    throw new CairnError("RUN_INVALID", `${RUN_ENVIRONMENT_FILE} names an image that is not this run's workload source`, {
      path: `${RUN_ENVIRONMENT_FILE}#/image_manifest`,
      hint: "the run directory was edited",
    });
  }
  return {
    _type: IN_TOTO_STATEMENT_TYPE,
    subject: [{ name: "outcome", digest: { sha256: m.outcome.slice("sha256:".length) } }],
    predicateType: RUN_PREDICATE_TYPE,
    predicate: {
      run_id: m.run_id,
      status: m.status,
      run_manifest: { sha256: sha256(manifestBytes) },
      workload: { ...m.workload },
      environment,
      environment_manifest: envManifest !== undefined ? { address: envManifest.manifest_address, extension_address: envManifest.extension_address } : null,
      vm: { digest: m.vm_digest, qemu: m.vm.qemu },
      replay_log: { sha256: sha256(log), size: log.length },
      events: { sha256: sha256(events.bytes) },
      assertions: { sha256: sha256(assertions.bytes) },
      cost: {
        deterministic: { guest_instructions: guestInstructions(log) ?? null, guest_image_bytes: m.guest_image.size, output_bytes: outputBytes(events.model) },
        non_deterministic: cost,
      },
      cairn_version: m.recorded.cairn_version,
    },
  };
}

/** Signs the run directory's statement; writes `out` (default RUNDIR/receipt.dsse.json, 0644) and returns it. */
export function signReceipt(runDir: string, keys: readonly SigningKey[], out = join(runDir, RECEIPT_FILE)): { file: string; statement: ReceiptStatement } {
  // signing vouches for the status: checked here (receipt verify --run compares field by field instead, naming the field)
  checkStatusAgainstFiles(runDir);
  const statement = receiptStatement(runDir);
  const payload = Buffer.from(JSON.stringify(statement), "utf8");
  const envelope = signEnvelope(IN_TOTO_PAYLOAD_TYPE, payload, keys);
  writeFileAtomic(out, `${JSON.stringify(envelope, null, 2)}\n`, { mode: 0o644 });
  return { file: out, statement };
}

/** The first JSON pointer at which two plain models differ, or undefined. Object keys in `a`'s order, then keys only `b` has. */
export function firstDifference(a: unknown, b: unknown, path = ""): string | undefined {
  if (a === b) return undefined;
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      if (i >= a.length || i >= b.length) return `${path}/${i}`;
      const d = firstDifference(a[i], b[i], `${path}/${i}`);
      if (d !== undefined) return d;
    }
    return undefined;
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    for (const k of [...Object.keys(a), ...Object.keys(b).filter((k) => !(k in a))]) {
      const d = firstDifference(a[k], b[k], `${path}/${k.replaceAll("~", "~0").replaceAll("/", "~1")}`);
      if (d !== undefined) return d;
    }
    return undefined;
  }
  return path;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

export interface ReceiptVerification {
  readonly statement: ReceiptStatement;
  readonly keyId: string;
  /** True when a run directory was given and every field matched it. */
  readonly runChecked: boolean;
}

/**
 * Checks the envelope's signature with `keys` and that it carries a cairn run
 * statement; with `runDir`, that the statement equals the one recomputed from
 * the directory (RECEIPT_MISMATCH at the first differing field).
 */
export function verifyReceipt(receiptPath: string, keys: readonly VerifyingKey[], runDir?: string): ReceiptVerification {
  const bytes = readFileBounded(receiptPath, RECEIPT_MAX_BYTES, "receipt.max_bytes");
  const envelope = parseEnvelope(parseJsonBytes(bytes, { source: receiptPath }));
  const { payload, keyId } = verifyEnvelope(envelope, IN_TOTO_PAYLOAD_TYPE, keys);
  const statement = parseJsonBytes(payload, { source: `${receiptPath} payload` });
  if (!isJsonObject(statement) || statement._type !== IN_TOTO_STATEMENT_TYPE || statement.predicateType !== RUN_PREDICATE_TYPE) {
    throw new CairnError("RECEIPT_INVALID", `${receiptPath} is not an in-toto statement of a cairn run`, {
      path: "/predicateType",
      hint: `expected _type ${IN_TOTO_STATEMENT_TYPE} and predicateType ${RUN_PREDICATE_TYPE}`,
    });
  }
  if (runDir === undefined) return { statement, keyId, runChecked: false };
  const expected = receiptStatement(runDir);
  const diff = firstDifference(expected, JSON.parse(payload.toString("utf8")) as unknown);
  if (diff !== undefined) {
    throw new CairnError("RECEIPT_MISMATCH", `the receipt differs from the run directory at ${diff}`, {
      path: diff,
      hint: "the receipt is for another run, or the run directory changed after it was signed",
    });
  }
  return { statement, keyId, runChecked: true };
}
