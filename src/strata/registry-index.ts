/**
 * The index of a directory registry, `REG/cairn-index.json`
 * (`cairn.registry-index/1`): one line per layer and formation the registry
 * holds, rebuilt from the signed manifests present (`cairn registry index`),
 * the way Strata keeps `index/layers.yaml` beside its manifests. It is a
 * listing for people and other tools, derived and unsigned: no cairn command
 * decides anything from it (resolve, verify, search and export read the
 * signed manifests themselves), so a stale or forged index can mislead a
 * reader of the file but never a resolution. `--check` says whether it is
 * current.
 *
 * The index has no time in it and its entries are sorted by bytes, so the
 * same manifests give the same bytes and "current" is a byte comparison.
 * With trust keys every manifest's signature must verify against one of them
 * (the attestation rule of trust.ts, closed: unsigned is refused) before
 * anything is written; the index is written atomically or not at all.
 */
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { CairnError, compareBytes, FIXED_LIMIT_HINT, ioError, readFileBounded, writeFileAtomic, type VerifyingKey } from "../core/index.ts";
import type { Formation } from "./formation-document.ts";
import type { LayerManifest } from "./layer-manifest.ts";
import { LocalRegistry, type SignedDocument } from "./registry.ts";
import { registryPath } from "./registry-open.ts";
import { OCI_REGISTRY_SCHEME } from "./registry-oci.ts";
import { attest } from "./trust.ts";

export const REGISTRY_INDEX_FORMAT = "cairn.registry-index/1";
export const REGISTRY_INDEX_FILE = "cairn-index.json";
/** registry.max_index_bytes: the largest index `--check` reads back. */
export const MAX_INDEX_BYTES = 64 * 1024 * 1024;

export interface IndexedLayer {
  readonly id: string;
  readonly name: string;
  readonly version: string;
  readonly arch: string;
  readonly abi: string;
  readonly user_selectable: boolean;
  readonly sha256: string;
  readonly size: number;
  /** sha256 of the manifest envelope file: what a lockfile pins. */
  readonly envelope_sha256: string;
}

export interface IndexedFormation {
  readonly name: string;
  readonly version: string;
  readonly layers: readonly string[];
  readonly envelope_sha256: string;
}

export interface RegistryIndex {
  readonly format: typeof REGISTRY_INDEX_FORMAT;
  readonly layers: readonly IndexedLayer[];
  readonly formations: readonly IndexedFormation[];
}

/** Something the rebuild found wrong with the registry (listed, never fatal: the index lists what is there). */
export interface RegistryProblem {
  readonly path: string;
  readonly message: string;
}

export interface IndexBuild {
  readonly index: RegistryIndex;
  readonly bytes: Buffer;
  readonly problems: readonly RegistryProblem[];
  /** Blobs no layer manifest names (left in place: `cairn registry remove` deletes a layer's blob with it). */
  readonly unreferencedBlobs: readonly string[];
  /** How many manifests had their signature verified (0 without trust keys). */
  readonly signaturesChecked: number;
}

export function indexPath(reg: LocalRegistry): string {
  return join(reg.root, REGISTRY_INDEX_FILE);
}

function layerEntry(d: SignedDocument<LayerManifest>): IndexedLayer {
  const m = d.value;
  return {
    id: m.id,
    name: m.name,
    version: m.version,
    arch: m.arch,
    abi: m.abi,
    user_selectable: m.user_selectable,
    sha256: m.sha256,
    size: m.size,
    envelope_sha256: d.envelopeSha256,
  };
}

function formationEntry(d: SignedDocument<Formation>): IndexedFormation {
  return { name: d.value.name, version: d.value.version, layers: d.value.layers.map((l) => l.id), envelope_sha256: d.envelopeSha256 };
}

/** The index bytes: JSON, two-space indented, entries in the order given (callers sort). */
export function registryIndexBytes(index: RegistryIndex): Buffer {
  return Buffer.from(`${JSON.stringify(index, null, 2)}\n`);
}

/**
 * The index of what `layers` and `formations` hold, with the problems found
 * on the way (a missing or wrong-sized blob, a formation member the registry
 * lacks or holds with another blob). Every manifest is parsed (a malformed
 * one refuses the whole rebuild, naming its file); with `keys`, every
 * signature must verify against one of them.
 */
export function buildRegistryIndex(
  reg: LocalRegistry,
  keys: readonly VerifyingKey[] = [],
  docs?: { layers: SignedDocument<LayerManifest>[]; formations: SignedDocument<Formation>[] },
): IndexBuild {
  const layers = docs?.layers ?? reg.listLayers();
  const formations = docs?.formations ?? reg.listFormations();
  let signaturesChecked = 0;
  if (keys.length > 0) {
    for (const d of layers) attest(d, keys, false, reg.layerSignaturePath(d.value.id));
    for (const d of formations) attest(d, keys, false, reg.formationSignaturePath(d.value.name, d.value.version));
    signaturesChecked = layers.length + formations.length;
  }
  const problems: RegistryProblem[] = [];
  const byId = new Map(layers.map((d) => [d.value.id, d.value]));
  for (const d of layers) {
    const m = d.value;
    const where = reg.blobPath(m.sha256);
    let size: number | undefined;
    try {
      const st = statSync(where);
      size = st.isFile() ? st.size : undefined;
    } catch {
      size = undefined;
    }
    if (size === undefined) problems.push({ path: where, message: `layer ${m.id}: its blob ${m.sha256} is missing` });
    else if (size !== m.size) problems.push({ path: where, message: `layer ${m.id}: its blob is ${size} bytes, the manifest says ${m.size}` });
  }
  for (const d of formations) {
    const f = d.value;
    if (!existsSync(reg.formationPath(f.name, f.version))) {
      problems.push({ path: `formation:${f.name}@${f.version}`, message: `formation ${f.name}@${f.version} is stored under another file name` });
    }
    f.layers.forEach((member, i) => {
      const layer = byId.get(member.id);
      if (layer === undefined) problems.push({ path: `formation:${f.name}@${f.version}/layers/${i}`, message: `member ${member.id} is not in the registry` });
      else if (layer.sha256 !== member.sha256) {
        problems.push({
          path: `formation:${f.name}@${f.version}/layers/${i}`,
          message: `member ${member.id} pins ${member.sha256}, the registry's is ${layer.sha256}`,
        });
      }
    });
  }
  const named = new Set(layers.map((d) => d.value.sha256.slice("sha256:".length)));
  const unreferencedBlobs = blobNames(reg)
    .filter((hex) => !named.has(hex))
    .map((hex) => `sha256:${hex}`);
  const index: RegistryIndex = {
    format: REGISTRY_INDEX_FORMAT,
    layers: layers.map(layerEntry).sort((a, b) => compareBytes(a.id, b.id)),
    formations: formations.map(formationEntry).sort((a, b) => compareBytes(`${a.name}@${a.version}`, `${b.name}@${b.version}`)),
  };
  return { index, bytes: registryIndexBytes(index), problems, unreferencedBlobs, signaturesChecked };
}

/** The blob file names (64 hex) under blobs/sha256; hidden temporaries are skipped. */
function blobNames(reg: LocalRegistry): string[] {
  const dir = join(reg.root, "blobs", "sha256");
  try {
    return readdirSync(dir)
      .filter((n) => /^[0-9a-f]{64}$/.test(n))
      .sort(compareBytes);
  } catch (cause) {
    throw ioError(dir, cause);
  }
}

/** Writes the index atomically (readable by all, as the registry's other files). */
export function writeRegistryIndex(reg: LocalRegistry, bytes: Buffer): string {
  const path = indexPath(reg);
  writeFileAtomic(path, bytes, { mode: 0o644 });
  return path;
}

/** The index as stored, or undefined when the registry has none. */
export function readRegistryIndexBytes(reg: LocalRegistry): Buffer | undefined {
  const path = indexPath(reg);
  if (!existsSync(path)) return undefined;
  return readFileBounded(path, MAX_INDEX_BYTES, "registry.max_index_bytes", { notRegular: "REGISTRY_INVALID", limitHint: FIXED_LIMIT_HINT });
}

/** Whether the stored index is `expected` (byte for byte); a missing index is not current. */
export function indexIsCurrent(reg: LocalRegistry, expected: Buffer): boolean {
  const stored = readRegistryIndexBytes(reg);
  return stored?.equals(expected) === true;
}

/**
 * Opens the directory registry a maintenance command (`registry index`,
 * `registry remove`) names, relative to `cwd`. An `oci://` location is
 * refused before anything is contacted: cairn's OCI client reads and pushes,
 * it neither deletes nor re-indexes a remote repository.
 */
export function openDirectoryRegistry(unsafeLocation: string, cwd: string, command: string): LocalRegistry {
  const location = registryPath(unsafeLocation, cwd);
  if (location.startsWith(OCI_REGISTRY_SCHEME)) {
    throw new CairnError("REGISTRY_INVALID", `${command} works on a directory registry; ${location} is an OCI registry, which it does not change`, {
      path: "--registry",
      hint: "delete a tag with the registry's own tools (the distribution API's manifest DELETE, where the registry enables it); an OCI registry keeps no cairn index",
    });
  }
  return LocalRegistry.open(location);
}
