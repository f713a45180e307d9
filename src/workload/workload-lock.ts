/**
 * The workload lock `cairn.workload-lock/1`: a private (0600) JSON file that
 * names a workload's identities, its policy, its whole raw closure and its
 * derived entry. `lock_digest` is the sha256 of the JCS bytes of every other
 * field, so an edit to any field (or a truncated copy) is caught before the
 * lock is used. It is an integrity check, not a signature: whoever can write
 * the lock can recompute it; verify therefore re-derives every identity from
 * the raw closure instead of trusting the recorded ones.
 */
import {
  Checker,
  CairnError,
  childPath,
  declareIdentity,
  identityDigest,
  parseJsonBytes,
  parseSha256,
  type JsonObject,
  type Sha256Digest,
} from "../core/index.ts";
import { checkRaw, rawModel, type RawRef } from "./closure.ts";
import type { SourceKind, WorkloadIdentities } from "./workload-identity.ts";
import { parsePolicy, POLICY_CHOICES, POLICY_KEYS, POLICY_VERSION, policyModel, type LayerPolicy } from "../tree/index.ts";

export const WORKLOAD_LOCK_SCHEMA = "cairn.workload-lock/1";
/** A lock is small (one row per raw object); anything bigger is not a lock. */
export const LOCK_MAX_BYTES = 4 * 1024 * 1024;

/** `lock_digest`: an integrity check of the lock file (its body carries `schema`), not an identity. */
export const LOCK_DIGEST = declareIdentity({
  name: "workload lock lock_digest",
  tag: WORKLOAD_LOCK_SCHEMA,
  algorithm: "sha256",
  framing: "jcs-own-schema",
  role: "integrity",
  definedIn: "src/workload/workload-lock.ts",
});

/** Every top-level lock field, for the identity scope test (identity.ts places each one). */
export const LOCK_FIELDS = ["schema", "workload", "source_kind", "identities", "policy", "raw", "derived", "created", "cairn_version", "lock_digest"] as const;

export interface WorkloadLock {
  readonly kind: SourceKind;
  readonly identities: WorkloadIdentities;
  readonly policy: LayerPolicy;
  readonly raw: readonly RawRef[];
  readonly derived: { readonly digest: Sha256Digest; readonly size: number };
  /** Provenance only: when and by which cairn it was written. Not covered by any identity. */
  readonly created: string;
  readonly cairnVersion: string;
}

function body(lock: WorkloadLock): JsonObject {
  return {
    schema: WORKLOAD_LOCK_SCHEMA,
    workload: lock.identities.workload,
    source_kind: lock.kind,
    identities: { source: lock.identities.source, fs: lock.identities.fs, launch: lock.identities.launch },
    policy: policyModel(lock.policy),
    raw: rawModel(lock.raw),
    derived: { digest: lock.derived.digest, size: lock.derived.size },
    created: lock.created,
    cairn_version: lock.cairnVersion,
  };
}

/** The lock's `lock_digest`: the sha256 of the JCS of every other field (what names a lock in the store's verify memos). */
export function lockDigestOf(lock: WorkloadLock): Sha256Digest {
  return identityDigest(LOCK_DIGEST, body(lock));
}

/** The lock file text: the body plus `lock_digest`, pretty-printed for reading. */
export function encodeWorkloadLock(lock: WorkloadLock): string {
  return `${JSON.stringify({ ...body(lock), lock_digest: lockDigestOf(lock) }, null, 2)}\n`;
}

function digestField(c: Checker, o: JsonObject, key: string, path: string): Sha256Digest | undefined {
  const v = c.required(o, key, path);
  if (v === undefined) return undefined;
  try {
    return parseSha256(v, childPath(path, key));
  } catch {
    c.add(childPath(path, key), "must be sha256:<64 lowercase hex>", "DIGEST_INVALID");
    return undefined;
  }
}

/** Parses and checks a lock strictly; WORKLOAD_LOCK_INVALID names the first bad field. */
export function parseWorkloadLock(bytes: Uint8Array, name: string): WorkloadLock {
  const model = parseJsonBytes(bytes, { source: name });
  const c = new Checker("WORKLOAD_LOCK_INVALID");
  const o = c.object(model, "", LOCK_FIELDS);
  c.done(`workload lock ${name} refused`);
  const top = o!;
  if (top.schema !== WORKLOAD_LOCK_SCHEMA) c.add("/schema", `must be "${WORKLOAD_LOCK_SCHEMA}"`);
  const workload = digestField(c, top, "workload", "");
  const kind = c.string(c.required(top, "source_kind", ""), "/source_kind");
  if (kind !== undefined && kind !== "binary" && kind !== "oci") c.add("/source_kind", "must be binary or oci", "MODEL_VALUE");
  const ids = c.object(c.required(top, "identities", ""), "/identities", ["source", "fs", "launch"]);
  const source = ids && digestField(c, ids, "source", "/identities");
  const fs = ids && digestField(c, ids, "fs", "/identities");
  const launch = ids && digestField(c, ids, "launch", "/identities");
  const pol = c.object(c.required(top, "policy", ""), "/policy", ["version", ...POLICY_KEYS]);
  const relaxations: Record<string, string> = Object.create(null);
  if (pol !== undefined) {
    if (pol.version !== POLICY_VERSION) c.add("/policy/version", `must be "${POLICY_VERSION}" (this cairn's policy version)`, "MODEL_VALUE");
    for (const key of POLICY_KEYS) {
      const v = pol[key];
      const choices: readonly string[] = POLICY_CHOICES[key];
      // hardlinks and setid are always named (policyModel); a later key only when taken
      if (v === undefined && (key === "hardlinks" || key === "setid")) c.add(`/policy/${key}`, `must be ${choices.join(" or ")}`, "MODEL_VALUE");
      else if (v !== undefined && (typeof v !== "string" || !choices.includes(v))) c.add(`/policy/${key}`, `must be ${choices.join(" or ")}`, "MODEL_VALUE");
      else if (typeof v === "string") relaxations[key] = v;
    }
  }
  const raw = checkRaw(c, c.required(top, "raw", ""), "/raw");
  const der = c.object(c.required(top, "derived", ""), "/derived", ["digest", "size"]);
  const derivedDigest = der && digestField(c, der, "digest", "/derived");
  const derivedSize = der && c.integer(c.required(der, "size", "/derived"), "/derived/size", { min: 0 });
  const created = c.string(c.required(top, "created", ""), "/created");
  const cairnVersion = c.string(c.required(top, "cairn_version", ""), "/cairn_version");
  const lockDigest = digestField(c, top, "lock_digest", "");
  c.done(`workload lock ${name} refused`, "a lock is written by `cairn workload assemble`; do not edit it");
  const lock: WorkloadLock = {
    kind: kind as SourceKind,
    identities: { workload: workload!, source: source!, fs: fs!, launch: launch! },
    policy: parsePolicy(relaxations, "/policy"),
    raw: raw!,
    derived: { digest: derivedDigest!, size: derivedSize! },
    created: created!,
    cairnVersion: cairnVersion!,
  };
  if (lockDigestOf(lock) !== lockDigest) {
    throw new CairnError("WORKLOAD_LOCK_INVALID", `workload lock ${name} does not match its lock_digest (it was edited or damaged)`, {
      path: "/lock_digest",
      hint: "write a new lock with `cairn workload assemble`",
    });
  }
  return lock;
}
