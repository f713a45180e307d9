/**
 * The signed manifest file (`cairn.env-manifest/1`), read back strictly.
 *
 * Nothing outside the core is trusted. A reader recomputes the address from
 * the core's JCS bytes, rebuilds the core through the same normalization an
 * ingest uses (so a hand-edited core that ingest could never produce is
 * refused, even with a matching address), and recomputes every label
 * (pinned, image_pinned, unpinned, not_covered): a label that says more or
 * less than the core is a mismatch, not a display detail.
 */
import {
  CairnError,
  Checker,
  canonicalize,
  identityDigest,
  childPath,
  isJsonObject,
  parseDigest,
  refuseAll,
  toJsonValue,
  type JsonModel,
  type JsonObject,
} from "../core/index.ts";
import { buildCore, type EnvCore } from "./core.ts";
import { manifestOf, type EnvManifest, type ManifestSignature } from "./env-manifest.ts";
import { mountToString, normalizeMount } from "./mounts.ts";
import { DEFAULT_MANIFEST_LIMITS } from "./declared.ts";
import { ownModel } from "./own.ts";
import { MANIFEST_ADDRESS, MANIFEST_SCHEMA } from "./scope.ts";

const DOCUMENT_FIELDS = ["schema", "address", "pinned", "image_pinned", "unpinned", "core", "not_covered", "signature"] as const;
const SIGNATURE_RE = /^[A-Za-z0-9+/]{85}[AQgw]==$/; // exactly 64 bytes of canonical base64

/** The manifest file's text: the document as indented JSON with a final newline. */
export function manifestText(m: EnvManifest): string {
  return `${JSON.stringify(m, null, 2)}\n`;
}

/** Turns a core's mount tuple back into the string form a devcontainer.json would hold. */
function mountBack(v: JsonModel | undefined, path: string): JsonModel | undefined {
  if (!isJsonObject(v)) return v;
  const { source, target, kind, read_only: ro } = v;
  const keys = Object.keys(v);
  if (keys.length !== 4 || (source !== null && typeof source !== "string") || typeof target !== "string" || typeof ro !== "boolean") return v;
  if (kind !== "bind" && kind !== "volume" && kind !== "tmpfs") return v;
  const s = mountToString({ source, target, kind, read_only: ro });
  return normalizeMount(s, path).ok ? s : v;
}

/**
 * Maps a core model back to the devcontainer.json it stands for (features as
 * an object, mounts as strings). Anything it does not recognize is passed
 * through unchanged, so buildCore reports it.
 */
function declarationOf(core: JsonObject): JsonObject {
  const out: JsonObject = Object.create(null) as JsonObject;
  for (const k of Object.keys(core)) {
    if (k === "schema") continue;
    const v = core[k] as JsonModel;
    if (
      k === "features" &&
      Array.isArray(v) &&
      v.every((f) => isJsonObject(f) && Object.keys(f).length === 2 && typeof f.id === "string" && isJsonObject(f.options))
    ) {
      const features: JsonObject = Object.create(null) as JsonObject;
      for (const f of v as JsonObject[]) features[f.id as string] = f.options as JsonModel;
      out[k] = features;
    } else if (k === "mounts" && Array.isArray(v)) {
      out[k] = v.map((m, i) => mountBack(m, childPath("/core/mounts", i)) ?? m);
    } else if (k === "workspaceMount") {
      out[k] = mountBack(v, "/core/workspaceMount") ?? v;
    } else out[k] = v;
  }
  return out;
}

/** Validates a core model by rebuilding it; returns the typed core when it is canonical. */
export function parseCore(unsafeInput: unknown, path = "/core"): EnvCore {
  const unsafeCore = ownModel(unsafeInput ?? null, DEFAULT_MANIFEST_LIMITS.max_depth, path);
  if (!isJsonObject(unsafeCore)) throw new CairnError("MANIFEST_MISMATCH", "core must be an object", { path });
  if (unsafeCore.schema !== MANIFEST_SCHEMA) {
    throw new CairnError("MANIFEST_MISMATCH", `core schema must be "${MANIFEST_SCHEMA}"`, {
      path: `${path}/schema`,
      hint: "this cairn reads only cairn.env-manifest/1",
    });
  }
  let rebuilt: EnvCore;
  try {
    rebuilt = buildCore(declarationOf(unsafeCore)).core;
  } catch (cause) {
    const issues = cause instanceof CairnError && cause.issues.length > 0 ? cause.issues.map((i) => ({ ...i, path: `${path}${i.path}` })) : [];
    throw issues.length > 0
      ? refuseAll("MANIFEST_MISMATCH", "core is not a valid manifest core", issues)
      : new CairnError("MANIFEST_MISMATCH", "core is not a valid manifest core", { path, cause });
  }
  if (canonicalize(rebuilt) !== canonicalize(toJsonValue(unsafeCore))) {
    throw new CairnError("MANIFEST_MISMATCH", "core is not in canonical form (ingest would never produce it)", {
      path,
      hint: "re-ingest the devcontainer.json instead of editing a manifest by hand",
    });
  }
  return rebuilt;
}

/** Reads a manifest document strictly; see the module comment for what is recomputed. */
export function parseManifest(unsafeInput: unknown): EnvManifest {
  const c = new Checker("MANIFEST_MISMATCH");
  const doc = c.object(ownModel(unsafeInput, DEFAULT_MANIFEST_LIMITS.max_depth), "", DOCUMENT_FIELDS);
  c.done("manifest refused");
  if (doc === undefined) throw new CairnError("MANIFEST_MISMATCH", "manifest must be an object", { path: "" });
  if (doc.schema !== MANIFEST_SCHEMA) {
    throw new CairnError("MANIFEST_MISMATCH", `not a ${MANIFEST_SCHEMA} document`, { path: "/schema" });
  }
  const stated = parseDigest(doc.address, "/address", "blake3");
  if (!isJsonObject(doc.core)) throw new CairnError("MANIFEST_MISMATCH", "core must be an object", { path: "/core" });
  // Tamper check first: the address must be the hash of the core exactly as stored.
  const actual = identityDigest(MANIFEST_ADDRESS, toJsonValue(doc.core));
  if (actual !== stated) {
    throw new CairnError("MANIFEST_MISMATCH", "the address does not match the core", {
      path: "/address",
      hint: `the core hashes to ${actual}; the file was edited or damaged after ingest`,
    });
  }
  const core = parseCore(doc.core);
  const expected = manifestOf(core);
  for (const field of ["pinned", "image_pinned", "unpinned", "not_covered"] as const) {
    if (canonicalize(toJsonValue(doc[field] ?? null)) !== canonicalize(expected[field])) {
      throw new CairnError("MANIFEST_MISMATCH", `label "${field}" does not match the core`, {
        path: `/${field}`,
        hint: "labels are derived from the core; a label that says more than the core is refused",
      });
    }
  }
  let signature: ManifestSignature | undefined;
  if (doc.signature !== undefined) {
    const s = c.object(doc.signature, "/signature", ["key_id", "sig"]);
    c.done("manifest refused");
    const keyId = parseDigest(s?.key_id, "/signature/key_id", "sha256");
    if (typeof s?.sig !== "string" || !SIGNATURE_RE.test(s.sig)) {
      throw new CairnError("SIGNATURE_INVALID", "signature is not 64 bytes of base64", { path: "/signature/sig" });
    }
    signature = { key_id: keyId as ManifestSignature["key_id"], sig: s.sig };
  }
  return signature ? { ...expected, signature } : expected;
}

/** True when a parsed JSON model looks like a manifest document rather than a devcontainer.json. */
export function isManifestDocument(v: JsonModel): boolean {
  return isJsonObject(v) && v.schema === MANIFEST_SCHEMA;
}
