/**
 * Strata's LockFile (seed 002): parsing, the policy check `Validate`,
 * `IsFrozen`, and Strata's `EnvironmentID`.
 *
 * Parsing reads what Strata reads and refuses only what is not a lockfile
 * (unknown fields, wrong types, duplicate keys, null entries); it does not
 * apply policy, so `lock diff` can still inspect a malformed lockfile.
 * `validateLockFile` is the seed's Validate: a digest that is present must be
 * 64 lowercase hex, every layer id one safe path component, and no two layers
 * may share a mount order. An unfrozen lockfile (empty digests) is valid.
 *
 * EnvironmentID is Strata's, exactly (its spec/lockfile_hash.go, to which the
 * seed defers): the lowercase hex SHA-256 of Go's JSON encoding of
 *   {"base_ami_sha256", "layer_sha256s" (in mount order),
 *    "env" (omitted when empty), "on_ready" (omitted when empty),
 *    "packages" (omitted when empty; each set {"manager", "env" (omitted
 *    when empty), "packages": [{"name", "version", "sha256" (omitted when
 *    empty)}] or null})}
 * in that key order, and "" when the lockfile is not frozen. It covers what
 * runs from deterministic instructions; cairn's stronger content identity
 * (env-id.ts) covers more. docs/identities.md says what each covers.
 */
import { createHash } from "node:crypto";
import { Checker, compareBytes, type Issue, readYamlText, toYamlText } from "../../core/index.ts";
import { type GoJson, goJson } from "./go-json.ts";
import { LOCK_FILE } from "./schema.ts";
import type { LockFile } from "./types.ts";
import { readStruct, writeStruct } from "./struct-wire.ts";

/** Reads a lockfile's YAML text: the document's own problems and every field problem, listed together, refused once. */
export function parseLockFileText(text: string, source = "lockfile"): LockFile {
  const c = new Checker("LOCK_INVALID");
  const { model, issues } = readYamlText(text, source);
  c.adopt(issues);
  const lock = readStruct(c, model, "", LOCK_FILE) as unknown as LockFile;
  c.done(source, "a Strata lockfile has the fields of seed 002's LockFile; see docs/strata.md");
  return lock;
}

export function lockFileToYaml(l: LockFile): string {
  return toYamlText(writeStruct(l as unknown as Record<string, unknown>, LOCK_FILE));
}

const LAYER_DIGEST = /^[0-9a-f]{64}$/;

/** The seed's ValidateLayerDigest: exactly 64 lowercase hex characters; empty is an error, not "unverified". */
export function layerDigestProblem(digest: string): string | undefined {
  if (digest === "") return "a layer digest must not be empty";
  if (!LAYER_DIGEST.test(digest)) return "a layer digest is exactly 64 lowercase hex characters (no sha256: prefix, no uppercase)";
  return undefined;
}

/** The seed's ValidateLayerID: one path element: non-empty, no '/', not '.' or '..', no NUL. */
export function layerIdProblem(id: string): string | undefined {
  if (id === "") return "a layer id must not be empty";
  if (id.includes("/")) return "a layer id is one path component: it must not contain '/'";
  if (id === "." || id === "..") return `a layer id must not be "${id}"`;
  if (id.includes("\0")) return "a layer id must not contain a NUL byte";
  return undefined;
}

/** The seed's LockFile.Validate, as a list of problems (empty when valid). */
export function lockFileProblems(l: LockFile): Issue[] {
  const out: Issue[] = [];
  const add = (path: string, message: string, code: Issue["code"] = "LOCK_INVALID") => out.push({ path, message, code });
  if (l.base.ami_sha256 !== "") {
    const p = layerDigestProblem(l.base.ami_sha256);
    if (p) add("/base/ami_sha256", p.replace("a layer digest", "a base digest"), "DIGEST_INVALID");
  }
  const orders = new Map<number, number>();
  l.layers.forEach((layer, i) => {
    const id = layerIdProblem(layer.id);
    if (id) add(`/layers/${i}/id`, id, "PATH_UNSAFE");
    if (layer.sha256 !== "") {
      const p = layerDigestProblem(layer.sha256);
      if (p) add(`/layers/${i}/sha256`, p, "DIGEST_INVALID");
    }
    const prev = orders.get(layer.mount_order);
    if (prev !== undefined)
      add(`/layers/${i}/mount_order`, `mount_order ${layer.mount_order} is also layer ${prev}'s: two layers cannot share a place in the stack`);
    else orders.set(layer.mount_order, i);
  });
  return out;
}

/** Throws LOCK_INVALID (or the first problem's code) listing every problem Validate finds. */
export function validateLockFile(l: LockFile, source = "lockfile"): void {
  const c = new Checker("LOCK_INVALID");
  c.adopt(lockFileProblems(l));
  c.done(source, "Validate refuses a present digest that is not 64 lowercase hex, an unsafe layer id and a repeated mount order");
}

/** The seed's IsFrozen: every layer has a digest and the base has one. */
export function isFrozen(l: LockFile): boolean {
  return l.layers.every((layer) => layer.sha256 !== "") && l.base.ami_sha256 !== "";
}

/** The JSON text Strata hashes for the EnvironmentID (exposed for `lock id --explain` and the tests). */
export function environmentIdInput(l: LockFile): string {
  const layers = [...l.layers].sort((a, b) => a.mount_order - b.mount_order);
  const input: Record<string, GoJson> = { base_ami_sha256: l.base.ami_sha256, layer_sha256s: layers.map((x) => x.sha256) };
  const envKeys = Object.keys(l.env).sort(compareBytes);
  if (envKeys.length > 0) input.env = Object.fromEntries(envKeys.map((k) => [k, l.env[k]!]));
  if (l.on_ready.length > 0) input.on_ready = [...l.on_ready];
  if (l.packages.length > 0) {
    input.packages = l.packages.map((set) => {
      const o: Record<string, GoJson> = { manager: set.manager };
      if (set.env !== "") o.env = set.env;
      o.packages =
        set.packages === null
          ? null
          : set.packages.map((p): GoJson => (p.sha256 === "" ? { name: p.name, version: p.version } : { name: p.name, version: p.version, sha256: p.sha256 }));
      return o;
    });
  }
  return goJson(input);
}

/** Strata's EnvironmentID: bare lowercase hex, or "" when the lockfile is not frozen (not an identity). */
export function environmentId(l: LockFile): string {
  if (!isFrozen(l)) return "";
  return createHash("sha256").update(environmentIdInput(l), "utf8").digest("hex");
}
