/**
 * The signed manifest file (`cairn.env-manifest/2`: the standard's core, cairn's
 * extension, both addresses, labels, signature), read back strictly.
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
  compareBytes,
  isJsonObject,
  parseSha256,
  parseDigest,
  refuseAll,
  toJsonValue,
  type JsonModel,
  type JsonObject,
} from "../core/index.ts";
import { buildCore, type EnvCore, type EnvExtension } from "./core.ts";
import { manifestOf, type EnvManifest, type ManifestSignature } from "./env-manifest.ts";
import { mountToString, normalizeMount } from "./mounts.ts";
import { DEFAULT_MANIFEST_LIMITS } from "./declared.ts";
import { ownModel } from "./own.ts";
import { normalizeFeatureId } from "./reference.ts";
import { localFeatureIds, type LocalFeaturePins } from "./local-features.ts";
import { EXTENSION_ADDRESS, EXTENSION_SCHEMA, MANIFEST_ADDRESS, MANIFEST_DOCUMENT_SCHEMA, MANIFEST_SCHEMA } from "./scope.ts";

const DOCUMENT_FIELDS = [
  "schema",
  "address",
  "extension_address",
  "pinned",
  "image_pinned",
  "unpinned",
  "core",
  "extension",
  "not_covered",
  "signature",
] as const;
const SIGNATURE_RE = /^[A-Za-z0-9+/]{85}[AQgw]==$/; // exactly 64 bytes of canonical base64

/** The manifest file's text: the document as indented JSON with a final newline. */
export function manifestText(m: EnvManifest): string {
  return `${JSON.stringify(m, null, 2)}\n`;
}

/** Turns a mount tuple back into the string form a devcontainer.json would hold. */
function mountBack(v: JsonModel | undefined, path: string, readOnly: boolean | undefined): JsonModel | undefined {
  if (!isJsonObject(v)) return v;
  const { source, target, kind } = v;
  const ro = readOnly ?? v.read_only;
  const keys = Object.keys(v);
  if (
    keys.length !== (readOnly === undefined ? 4 : 3) ||
    (source !== null && typeof source !== "string") ||
    typeof target !== "string" ||
    typeof ro !== "boolean"
  )
    return v;
  if (kind !== "bind" && kind !== "volume" && kind !== "tmpfs") return v;
  const s = mountToString({ source, target, kind, read_only: ro });
  return normalizeMount(s, path).ok ? s : v;
}

/**
 * Maps a core and an extension back to the devcontainer.json they stand for
 * (features as an object, mounts as strings). Anything it does not recognize
 * is passed through unchanged, so buildCore reports it.
 */
function declarationOf(core: JsonObject, ext: JsonObject): JsonObject {
  const out: JsonObject = Object.create(null) as JsonObject;
  const readOnly = new Set(Array.isArray(ext.read_only_mounts) ? ext.read_only_mounts : []);
  for (const [k, v] of [...Object.entries(core), ...Object.entries(ext)] as [string, JsonModel][]) {
    // Not declared in a devcontainer.json: read_only_mounts is folded back into the mounts,
    // local_features (pins of bytes, not a declaration) is checked by readLocalPins.
    // feature_closure (from a lockfile, not a declaration) is checked by readFeatureClosure.
    if (k === "schema" || k === "read_only_mounts" || k === "local_features" || k === "feature_closure") continue;
    if (k === "remoteUser" && v === null) continue;
    if (
      k === "features" &&
      Array.isArray(v) &&
      v.every((f) => isJsonObject(f) && Object.keys(f).length === 2 && typeof f.id === "string" && isJsonObject(f.options))
    ) {
      const features: JsonObject = Object.create(null) as JsonObject;
      for (const f of v as JsonObject[]) features[f.id as string] = f.options as JsonModel;
      out[k] = features;
    } else if (k === "mounts" && Array.isArray(v)) {
      out[k] = v.map((m, i) => mountBack(m, childPath("/core/mounts", i), isJsonObject(m) && readOnly.has(m.target as string)) ?? m);
    } else if (k === "workspaceMount") {
      out[k] = mountBack(v, "/extension/workspaceMount", undefined) ?? v;
    } else out[k] = v;
  }
  return out;
}

/**
 * Validates a core and an extension by rebuilding both from the declaration
 * they stand for; returns them typed when both are canonical.
 */
export function parseCore(unsafeCoreInput: unknown, unsafeExtInput: unknown, path = ""): { core: EnvCore; extension: EnvExtension } {
  const unsafeCore = ownModel(unsafeCoreInput ?? null, DEFAULT_MANIFEST_LIMITS.max_depth, `${path}/core`);
  const unsafeExt = ownModel(unsafeExtInput ?? null, DEFAULT_MANIFEST_LIMITS.max_depth, `${path}/extension`);
  if (!isJsonObject(unsafeCore)) throw new CairnError("MANIFEST_MISMATCH", "core must be an object", { path: `${path}/core` });
  if (!isJsonObject(unsafeExt)) throw new CairnError("MANIFEST_MISMATCH", "extension must be an object", { path: `${path}/extension` });
  if (unsafeCore.schema !== MANIFEST_SCHEMA) {
    throw new CairnError("MANIFEST_MISMATCH", `core schema must be "${MANIFEST_SCHEMA}"`, {
      path: `${path}/core/schema`,
      hint: `this cairn reads cores of the standard's ${MANIFEST_SCHEMA}`,
    });
  }
  if (unsafeExt.schema !== EXTENSION_SCHEMA) {
    throw new CairnError("MANIFEST_MISMATCH", `extension schema must be "${EXTENSION_SCHEMA}"`, { path: `${path}/extension/schema` });
  }
  let rebuilt: { core: EnvCore; extension: EnvExtension };
  try {
    rebuilt = buildCore(declarationOf(unsafeCore, unsafeExt));
  } catch (cause) {
    const issues = cause instanceof CairnError && cause.issues.length > 0 ? cause.issues.map((i) => ({ ...i, path: `${path}/core${i.path}` })) : [];
    throw issues.length > 0
      ? refuseAll("MANIFEST_MISMATCH", "core is not a valid manifest core", issues)
      : new CairnError("MANIFEST_MISMATCH", "core is not a valid manifest core", { path: `${path}/core`, cause });
  }
  if (unsafeExt.local_features !== undefined) {
    rebuilt.extension = { ...rebuilt.extension, local_features: readLocalPins(unsafeExt.local_features, rebuilt.core, `${path}/extension/local_features`) };
  }
  if (unsafeExt.feature_closure !== undefined) {
    rebuilt.extension = { ...rebuilt.extension, feature_closure: readFeatureClosure(unsafeExt.feature_closure, `${path}/extension/feature_closure`) };
  }
  for (const [part, built, stored] of [
    ["core", rebuilt.core, unsafeCore],
    ["extension", rebuilt.extension, unsafeExt],
  ] as const) {
    if (canonicalize(built) !== canonicalize(toJsonValue(stored))) {
      throw new CairnError("MANIFEST_MISMATCH", `${part} is not in canonical form (ingest would never produce it)`, {
        path: `${path}/${part}`,
        hint: "re-ingest the devcontainer.json instead of editing a manifest by hand",
      });
    }
  }
  return { core: rebuilt.core, extension: rebuilt.extension };
}

/**
 * The stored pins of local features: present only when there is at least one,
 * exactly one `sha256:` digest for each local feature of the core (ingest pins
 * all of them or none), nothing for any other id.
 */
function readLocalPins(unsafePins: JsonModel, core: EnvCore, path: string): LocalFeaturePins {
  if (!isJsonObject(unsafePins)) throw new CairnError("MANIFEST_MISMATCH", "local_features must be an object of feature id to digest", { path });
  const expected = localFeatureIds(core.features);
  const stated = Object.keys(unsafePins).sort(compareBytes);
  if (expected.length === 0 || canonicalize(stated) !== canonicalize(expected)) {
    throw new CairnError("MANIFEST_MISMATCH", "local_features must pin exactly the core's local features", {
      path,
      hint: "re-ingest the devcontainer.json with --features-dir instead of editing a manifest by hand",
    });
  }
  const pins: LocalFeaturePins = {};
  for (const id of expected) pins[id] = parseSha256(unsafePins[id], childPath(path, id));
  return pins;
}

/**
 * The dependsOn closure a lockfile supplied: present only when non-empty, a
 * list of OCI feature references, each by digest, sorted by bytes, no repeats
 * (what ingest writes; anything else was edited by hand).
 */
function readFeatureClosure(unsafe: JsonModel, path: string): string[] {
  const ok =
    Array.isArray(unsafe) &&
    unsafe.length > 0 &&
    unsafe.every((r, i) => {
      if (typeof r !== "string") return false;
      const n = normalizeFeatureId(r);
      return n.ok && n.kind === "oci" && n.pinned && n.id === r && (i === 0 || compareBytes(unsafe[i - 1] as string, r) < 0);
    });
  if (!ok) {
    throw new CairnError("MANIFEST_MISMATCH", "feature_closure must be a sorted list of feature references by digest", {
      path,
      hint: "re-ingest the devcontainer.json with its lockfile instead of editing a manifest by hand",
    });
  }
  return [...(unsafe as string[])];
}

/** Reads a manifest document strictly; see the module comment for what is recomputed. */
export function parseManifest(unsafeInput: unknown): EnvManifest {
  const c = new Checker("MANIFEST_MISMATCH");
  const doc = c.object(ownModel(unsafeInput, DEFAULT_MANIFEST_LIMITS.max_depth), "", DOCUMENT_FIELDS);
  c.done("manifest refused");
  if (doc === undefined) throw new CairnError("MANIFEST_MISMATCH", "manifest must be an object", { path: "" });
  if (doc.schema !== MANIFEST_DOCUMENT_SCHEMA) {
    throw new CairnError("MANIFEST_MISMATCH", `not a ${MANIFEST_DOCUMENT_SCHEMA} document`, {
      path: "/schema",
      hint: "re-ingest the devcontainer.json (a cairn.env-manifest/1 document predates the standard's core)",
    });
  }
  // Tamper check first: each address must be the hash of its part exactly as stored.
  for (const [field, part, decl] of [
    ["address", "core", MANIFEST_ADDRESS],
    ["extension_address", "extension", EXTENSION_ADDRESS],
  ] as const) {
    const stated = parseDigest(doc[field], `/${field}`, "blake3");
    if (!isJsonObject(doc[part])) throw new CairnError("MANIFEST_MISMATCH", `${part} must be an object`, { path: `/${part}` });
    const actual = identityDigest(decl, toJsonValue(doc[part]));
    if (actual !== stated) {
      throw new CairnError("MANIFEST_MISMATCH", `the ${field.replace("_", " ")} does not match the ${part}`, {
        path: `/${field}`,
        hint: `the ${part} hashes to ${actual}; the file was edited or damaged after ingest`,
      });
    }
  }
  const { core, extension } = parseCore(doc.core, doc.extension);
  const expected = manifestOf(core, extension);
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
  return isJsonObject(v) && typeof v.schema === "string" && v.schema.startsWith("cairn.env-manifest/");
}
