/**
 * Resume linkage. When a run is suspended, its snapshot reference records the
 * address (and core) of the environment manifest it ran in. Resuming offers a
 * manifest; `checkResume` refuses any other address and names every core
 * field that differs — never a value, since env values may be secrets.
 */
import { CairnError, isJsonObject, parseDigest, type Blake3Digest, type Issue } from "../core/index.ts";
import type { EnvCore } from "./core.ts";
import { diffCores } from "./core-diff.ts";
import { DEFAULT_MANIFEST_LIMITS } from "./declared.ts";
import { parseCore } from "./document.ts";
import { ownModel } from "./own.ts";
import { addressOf, type EnvManifest } from "./env-manifest.ts";

export const SNAPSHOT_REF_SCHEMA = "cairn.snapshot-ref/1";

export interface SnapshotRef {
  schema: typeof SNAPSHOT_REF_SCHEMA;
  /** The manifest address at suspension. */
  manifest_address: Blake3Digest;
  /** The manifest core at suspension, so a refusal can name what changed. */
  core: EnvCore;
}

export function snapshotRefOf(manifest: EnvManifest): SnapshotRef {
  checkConsistent(manifest.core, manifest.address, "offered manifest");
  return { schema: SNAPSHOT_REF_SCHEMA, manifest_address: manifest.address, core: manifest.core };
}

function checkConsistent(core: EnvCore, address: Blake3Digest, what: string): void {
  if (addressOf(core) !== address) {
    throw new CairnError("MANIFEST_MISMATCH", `${what}: the address does not match its core`, { path: "/manifest_address" });
  }
}

/** Reads a stored snapshot reference strictly; the address is recomputed from the core. */
export function parseSnapshotRef(unsafeInput: unknown): SnapshotRef {
  const unsafe = ownModel(unsafeInput, DEFAULT_MANIFEST_LIMITS.max_depth);
  if (!isJsonObject(unsafe) || unsafe.schema !== SNAPSHOT_REF_SCHEMA) {
    throw new CairnError("MANIFEST_MISMATCH", `not a ${SNAPSHOT_REF_SCHEMA} document`, { path: "/schema" });
  }
  for (const k of Object.keys(unsafe)) {
    if (k !== "schema" && k !== "manifest_address" && k !== "core") {
      throw new CairnError("MODEL_UNKNOWN_FIELD", `unknown field "${k.slice(0, 64)}"`, { path: `/${k}` });
    }
  }
  const address = parseDigest(unsafe.manifest_address, "/manifest_address", "blake3") as Blake3Digest;
  const core = parseCore(unsafe.core, "/core");
  checkConsistent(core, address, "snapshot reference");
  return { schema: SNAPSHOT_REF_SCHEMA, manifest_address: address, core };
}

/**
 * Refuses to resume `snapshot` in `offered` unless both have the same
 * address. The error's issues name each differing core field.
 */
export function checkResume(snapshot: SnapshotRef, offered: EnvManifest): void {
  checkConsistent(snapshot.core, snapshot.manifest_address, "snapshot reference");
  checkConsistent(offered.core, offered.address, "offered manifest");
  if (snapshot.manifest_address === offered.address) return;
  const diffs = diffCores(snapshot.core, offered.core);
  const issues: Issue[] = diffs.map((d) => ({ code: "RESUME_MISMATCH", path: `/core${d.path}`, message: `${d.change} since suspension` }));
  const fields = [...new Set(diffs.map((d) => d.path.split("/")[1]))].join(", ");
  throw new CairnError("RESUME_MISMATCH", `the offered environment differs from the one suspended in: ${fields}`, {
    path: issues[0]?.path ?? "/core",
    hint: `suspended in ${snapshot.manifest_address}, offered ${offered.address}; resume with the original devcontainer.json`,
    issues,
  });
}
