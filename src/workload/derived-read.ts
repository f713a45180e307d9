/**
 * Reads a stored derived entry back into the tree and launch it records, for
 * the one caller that may: a verify whose memo (verify-memo.ts) says this
 * machine's cairn, this very build, already re-derived the lock from its raw
 * closure. The bytes handed here were read from the store against the lock's
 * digest, so they are the bytes that derivation produced; they are still
 * read strictly (every key named, every value of its type), because a reader
 * that accepts more than the writer writes is how a memo bug would become a
 * wrong tree. What the entry says is then checked against the lock again:
 * its source kind, identities, policy and raw closure must be the lock's,
 * and the fs and launch identities are recomputed from the tree and launch
 * read here (so a tree read wrongly cannot match). Any refusal is
 * WORKLOAD_MISMATCH naming the field; the caller then re-derives instead.
 */
import { CairnError, isSha256, type Sha256Digest } from "../core/index.ts";
import { FrozenTree, fsIdentityOf, policyModel, sortedEntries, type CanonicalTree, type FsEntry } from "../tree/index.ts";
import { rawModel } from "./closure.ts";
import { DERIVED_SCHEMA } from "./derived-entry.ts";
import { launchIdentity, type Launch } from "./launch.ts";
import { workloadIdentity } from "./workload-identity.ts";
import type { WorkloadLock } from "./workload-lock.ts";

export interface ReadDerived {
  readonly tree: CanonicalTree;
  readonly launch: Launch;
}

// every key list in JCS order (UTF-16 code units), the order the writer's canonical bytes have
const ENTRY_KEYS = ["identities", "launch", "policy", "raw", "schema", "source_kind", "tree"] as const;
const COMMON = ["gid", "mode", "mtime", "path", "type", "uid"];
const KEYS_BY_TYPE: Readonly<Record<string, readonly string[]>> = {
  dir: COMMON,
  file: ["gid", "mode", "mtime", "path", "sha256", "size", "type", "uid"],
  symlink: ["gid", "mode", "mtime", "path", "target", "type", "uid"],
};

function refuse(path: string, what: string): never {
  throw new CairnError("WORKLOAD_MISMATCH", `the stored derived entry ${what} (${path})`, {
    path,
    hint: "verify again with --full to re-derive it from the raw closure",
  });
}

function exactKeys(v: unknown, keys: readonly string[], path: string): Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) refuse(path, "is not an object where one belongs");
  // JSON.parse keeps the text's key order, and the stored bytes are JCS: exactly these keys, in this order
  const own = Object.keys(v);
  let same = own.length === keys.length;
  for (let k = 0; same && k < keys.length; k++) same = own[k] === keys[k];
  if (!same) refuse(path, `does not have exactly the keys ${keys.join(", ")}, in that order`);
  return v as Record<string, unknown>;
}

const isInt = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v);

function strings(v: unknown, path: string): string[] {
  if (!Array.isArray(v) || !v.every((s) => typeof s === "string")) refuse(path, "is not a list of strings");
  return v as string[];
}

function entryOf(v: unknown, i: number): FsEntry {
  const path = `/tree/${i}`;
  const type = (v as { type?: unknown } | null)?.type;
  const keys = typeof type === "string" && Object.hasOwn(KEYS_BY_TYPE, type) ? KEYS_BY_TYPE[type]! : COMMON;
  const o = exactKeys(v, keys, path);
  const { path: p, mode, uid, gid, mtime } = o;
  if (typeof p !== "string" || !isInt(mode) || !isInt(uid) || !isInt(gid) || !isInt(mtime)) refuse(path, "has an entry field of the wrong type");
  // the parsed object is returned as it is: its keys are exactly the entry's (checked above), so a copy would add nothing
  if (type === "dir") return o as unknown as FsEntry;
  if (type === "file") {
    if (!isInt(o.size) || !isSha256(o.sha256)) refuse(path, "has a file size or sha256 of the wrong form");
    return o as unknown as FsEntry;
  }
  if (type === "symlink") {
    if (typeof o.target !== "string") refuse(path, "has a symlink target that is not a string");
    return o as unknown as FsEntry;
  }
  return refuse(`${path}/type`, "has an entry type cairn does not write");
}

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/**
 * The tree and launch of the stored derived entry `bytes` of `lock`, read
 * strictly and checked against the lock as above. `bytes` must already be
 * the bytes the lock's derived digest names.
 */
export function readStoredDerived(bytes: Buffer, lock: WorkloadLock): ReadDerived {
  let model: unknown;
  try {
    model = JSON.parse(bytes.toString("utf8"));
  } catch {
    refuse("/", "is not JSON");
  }
  const top = exactKeys(model, ENTRY_KEYS, "");
  if (top.schema !== DERIVED_SCHEMA) refuse("/schema", `is not ${DERIVED_SCHEMA}`);
  if (top.source_kind !== lock.kind) refuse("/source_kind", "names another source kind than the lock");
  if (!same(top.identities, { fs: lock.identities.fs, launch: lock.identities.launch, source: lock.identities.source, workload: lock.identities.workload })) {
    refuse("/identities", "names other identities than the lock");
  }
  if (!same(top.policy, sortKeys(policyModel(lock.policy)))) refuse("/policy", "names another policy than the lock");
  if (!same(top.raw, rawModel(lock.raw).map(sortKeys))) refuse("/raw", "names another raw closure than the lock");
  const l = exactKeys(top.launch, ["argv", "env", "gid", "uid", "workdir"], "/launch");
  if (!isInt(l.uid) || !isInt(l.gid) || typeof l.workdir !== "string") refuse("/launch", "has a launch field of the wrong type");
  const launch: Launch = { argv: strings(l.argv, "/launch/argv"), env: strings(l.env, "/launch/env"), workdir: l.workdir, uid: l.uid, gid: l.gid };
  if (!Array.isArray(top.tree)) refuse("/tree", "has no list of entries");
  const list = top.tree as unknown[];
  const entries = new Array<FsEntry>(list.length);
  for (let i = 0; i < list.length; i++) entries[i] = entryOf(list[i], i);
  let tree: FrozenTree;
  try {
    tree = new FrozenTree(entries);
  } catch (e) {
    return refuse("/tree", `is not in byte order of path (${(e as Error).message})`);
  }
  // recomputed, not read: a tree or launch read wrongly cannot give the lock's identities
  const fs = fsIdentityOf(sortedEntries(tree));
  if (fs !== lock.identities.fs) refuse("/identities/fs", "holds a tree whose fs identity is not the lock's");
  const launchId = launchIdentity(launch);
  if (launchId !== lock.identities.launch) refuse("/identities/launch", "holds a launch whose identity is not the lock's");
  const workload: Sha256Digest = workloadIdentity({ kind: lock.kind, source: lock.identities.source, fs, launch: launchId, policy: lock.policy });
  if (workload !== lock.identities.workload) refuse("/identities/workload", "does not give the lock's workload identity");
  return { tree, launch };
}

/** A flat record's keys in JCS order (the stored entry's keys are sorted; the models here are built in another order). */
function sortKeys<T extends Record<string, unknown>>(o: T): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(o).sort()) out[k] = o[k];
  return out;
}
