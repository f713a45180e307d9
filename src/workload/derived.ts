/**
 * The derived entry `cairn.derived/1`: the canonical tree of a workload,
 * stored in the content store under the sha256 of its JCS bytes. It names its
 * complete raw closure, the launch values and their digest, the policy with
 * its version, and the filesystem digest, so a reader holding only the entry
 * can tell what it was made from and check it.
 *
 * The run code consumes it only through `openVerifiedWorkload`, which
 * re-derives everything first.
 */
import { Checker, childPath, parseJsonBytes, parseSha256, canonicalBytes, type JsonModel, type Sha256Digest } from "../core/index.ts";
import { checkRaw, rawModel, type RawRef } from "./closure.ts";
import type { SourceKind, WorkloadIdentities } from "./identity.ts";
import { launchModel, type Launch } from "./launch.ts";
import { policyModel, type LayerPolicy } from "./policy.ts";
import { sortedEntries } from "./fs-identity.ts";
import type { CanonicalTree, FsEntry } from "./tree.ts";

export const DERIVED_SCHEMA = "cairn.derived/1";

export interface DerivedEntry {
  readonly kind: SourceKind;
  readonly identities: WorkloadIdentities;
  readonly policy: LayerPolicy;
  readonly launch: Launch;
  readonly raw: readonly RawRef[];
  readonly tree: CanonicalTree;
}

function entryModel(e: FsEntry): Record<string, string | number> {
  const base = { path: e.path, type: e.type, mode: e.mode, uid: e.uid, gid: e.gid, mtime: e.mtime };
  if (e.type === "file") return { ...base, size: e.size, sha256: e.sha256 };
  if (e.type === "symlink") return { ...base, target: e.target };
  return base;
}

/** The JCS bytes of a derived entry (deterministic: the same workload always gives the same bytes). */
export function encodeDerived(d: DerivedEntry): Buffer {
  return canonicalBytes({
    schema: DERIVED_SCHEMA,
    source_kind: d.kind,
    identities: { ...d.identities },
    policy: policyModel(d.policy),
    launch: launchModel(d.launch),
    raw: rawModel(d.raw),
    tree: sortedEntries(d.tree).map(entryModel),
  });
}

function checkEntry(c: Checker, v: JsonModel, p: string): FsEntry | undefined {
  const o = c.object(v, p, ["path", "type", "mode", "uid", "gid", "mtime", "size", "sha256", "target"]);
  if (o === undefined) return undefined;
  const path = c.string(c.required(o, "path", p), childPath(p, "path"));
  const type = c.string(c.required(o, "type", p), childPath(p, "type"));
  const mode = c.integer(c.required(o, "mode", p), childPath(p, "mode"), { min: 0, max: 0o7777 });
  const uid = c.integer(c.required(o, "uid", p), childPath(p, "uid"), { min: 0, max: 0xffffffff });
  const gid = c.integer(c.required(o, "gid", p), childPath(p, "gid"), { min: 0, max: 0xffffffff });
  const mtime = c.integer(c.required(o, "mtime", p), childPath(p, "mtime"));
  if (path === undefined || type === undefined || mode === undefined || uid === undefined || gid === undefined || mtime === undefined) return undefined;
  const base = { path, mode, uid, gid, mtime };
  const extra = (keys: string[]): void => {
    for (const k of ["size", "sha256", "target"]) if (!keys.includes(k) && k in o) c.add(childPath(p, k), `a ${type} has no ${k}`, "MODEL_UNKNOWN_FIELD");
  };
  if (type === "dir") {
    extra([]);
    return { type, ...base };
  }
  if (type === "file") {
    extra(["size", "sha256"]);
    const size = c.integer(c.required(o, "size", p), childPath(p, "size"), { min: 0 });
    let sha256: Sha256Digest | undefined;
    try {
      sha256 = parseSha256(c.required(o, "sha256", p), childPath(p, "sha256"));
    } catch {
      c.add(childPath(p, "sha256"), "must be sha256:<64 lowercase hex>", "DIGEST_INVALID");
    }
    return size === undefined || sha256 === undefined ? undefined : { type, ...base, size, sha256 };
  }
  if (type === "symlink") {
    extra(["target"]);
    const target = c.string(c.required(o, "target", p), childPath(p, "target"), { nonEmpty: true });
    return target === undefined ? undefined : { type, ...base, target };
  }
  c.add(childPath(p, "type"), "must be dir, file or symlink", "MODEL_VALUE");
  return undefined;
}

/**
 * Parses the tree, raw closure and recorded values of a stored derived entry.
 * Identities, launch and policy are returned as recorded; the caller compares
 * them with values it computes itself and never trusts them.
 */
export function parseDerivedTree(bytes: Uint8Array, name: string): { tree: CanonicalTree; raw: RawRef[]; recorded: JsonModel } {
  const model = parseJsonBytes(bytes, { source: name });
  const c = new Checker("STORE_CORRUPT");
  const o = c.object(model, "", ["schema", "source_kind", "identities", "policy", "launch", "raw", "tree"]);
  const tree = new Map<string, FsEntry>();
  let raw: RawRef[] | undefined;
  if (o !== undefined) {
    if (o.schema !== DERIVED_SCHEMA) c.add("/schema", `must be "${DERIVED_SCHEMA}"`);
    raw = checkRaw(c, c.required(o, "raw", ""), "/raw");
    const list = c.array(c.required(o, "tree", ""), "/tree");
    list?.forEach((v, i) => {
      const e = checkEntry(c, v, `/tree/${i}`);
      if (e === undefined) return;
      if (tree.has(e.path)) c.add(`/tree/${i}/path`, "duplicate path", "STORE_CORRUPT");
      tree.set(e.path, e);
    });
  }
  c.done(`derived entry ${name} refused`, "the store was modified; assemble again");
  return { tree, raw: raw!, recorded: model };
}
