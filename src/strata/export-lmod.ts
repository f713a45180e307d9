/**
 * The Lmod part of a lock export: one added layer (export-layer.ts) holding
 *
 *   /opt/cairn/modulefiles/NAME/VERSION.lua   each layer's modulefile, the
 *       bytes the lockfile pins (read out of the verified layer blob and
 *       checked against the lockfile's `modulefile.sha256`);
 *   /etc/profile.d/z-cairn-lmod.sh            the login script: `module use`
 *       of that tree, then `module load` of the profile's `defaults` (each
 *       ref as the module of the layer it names, see defaultModules).
 *
 * The tree is the export's own, above every layer, so what `module load`
 * finds there is what the lockfile pins: a later layer (or the base) holding
 * another file at a layer's `/usr/share/modulefiles` path cannot change it,
 * and a base's own modulefiles are not mixed into it. The layer's bytes follow
 * from the lockfile alone (the modulefile digests, the defaults), so the
 * exported manifest digest stays a function of the lockfile. A lockfile with
 * no modulefile and no preload list gets no such layer: its image is exactly
 * what it was before this layer existed.
 *
 * Nothing here runs Lmod or a modulefile; the module names made from
 * `defaults` are checked against MODULE_NAME by lmodLoginScript.
 */
import { CairnError, type Sha256Digest } from "../core/index.ts";
import type { LayoutLayerInput } from "../oci/index.ts";
import { readLayerBlobs } from "./blob-reader.ts";
import { addedLayer, type AddedFile } from "./export-layer.ts";
import type { Lockfile } from "./lockfile.ts";
import { LMOD_LOGIN_SCRIPT, lmodLoginScript } from "./modulefile.ts";
import { refString } from "./ref.ts";
import { versionHasPrefix } from "./version.ts";

/** The Lmod tree an export writes, relative to the image root (`module use /opt/cairn/modulefiles`). */
export const EXPORT_MODULE_ROOT = "opt/cairn/modulefiles";

/**
 * The Lmod module each of the lockfile's `defaults` loads: `NAME/VERSION` of
 * the lockfile's layer of that name whose version the ref's prefix matches
 * (the first in mount order), else the ref as `NAME/VERSION` or `NAME`, which
 * Lmod must find elsewhere. A formation ref names no module and loads nothing
 * (returned in `formations`, for the caveat).
 */
export function defaultModules(lock: Lockfile, order: readonly number[]): { modules: string[]; formations: string[] } {
  const modules: string[] = [];
  const formations: string[] = [];
  for (const d of lock.defaults) {
    if (d.kind === "formation") {
      formations.push(refString(d));
      continue;
    }
    const layer = order.map((i) => lock.layers[i]!).find((l) => l.name === d.name && (d.version === undefined || versionHasPrefix(l.version, d.version)));
    modules.push(layer !== undefined ? `${layer.name}/${layer.version}` : d.version !== undefined ? `${d.name}/${d.version}` : d.name);
  }
  return { modules, formations };
}

export interface LmodExport {
  readonly layer: LayoutLayerInput;
  /** `NAME/VERSION` of each modulefile written, in mount order. */
  readonly modules: readonly string[];
  readonly caveats: readonly string[];
}

/**
 * The Lmod layer for `lock`, or undefined when it carries no modulefile and
 * no preload list. `blobOf(i)` gives layer i's blob (already verified by
 * digest against the lockfile; it is checked again before it is unpacked).
 */
export async function lmodExportLayer(
  lock: Lockfile,
  blobOf: (i: number) => Buffer | { readonly path: string },
  order: readonly number[],
): Promise<LmodExport | undefined> {
  const { modules: preload, formations } = defaultModules(lock, order);
  const carriers = order.filter((i) => lock.layers[i]!.modulefile !== undefined);
  if (carriers.length === 0 && lock.defaults.length === 0) return undefined;
  const files: AddedFile[] = [];
  const modules: string[] = [];
  for (const i of carriers) {
    const l = lock.layers[i]!;
    const mf = l.modulefile!;
    const where = `/layers/${i}`;
    const want = new Set<Sha256Digest>([mf.sha256]);
    const b = blobOf(i);
    const input = b instanceof Uint8Array ? { blob: b } : { path: b.path };
    const { tree, content } = await readLayerBlobs([{ ...input, expected: { sha256: l.sha256!, size: l.size! }, where }], { keepOnly: want });
    const e = tree.get(mf.path);
    if (e?.type !== "file" || e.sha256 !== mf.sha256) {
      const found = e === undefined ? "nothing" : e.type === "file" ? e.sha256 : `a ${e.type}`;
      throw new CairnError("DIGEST_MISMATCH", `layer ${l.id}: the lockfile pins modulefile ${mf.path} at ${mf.sha256}, the blob holds ${found}`, {
        path: `${where}/modulefile/sha256`,
      });
    }
    files.push({ path: `${EXPORT_MODULE_ROOT}/${l.name}/${l.version}.lua`, data: content.get(mf.sha256)! });
    modules.push(`${l.name}/${l.version}`);
  }
  files.push({ path: LMOD_LOGIN_SCRIPT.slice(1), data: Buffer.from(lmodLoginScript(preload, `/${EXPORT_MODULE_ROOT}`), "utf8") });
  const caveats = ["the login script loads modules only where the image has Lmod (the base or a layer must install it); cairn does not check that it does"];
  const elsewhere = preload.filter((d) => !modules.includes(d));
  if (elsewhere.length > 0)
    caveats.push(`defaults name modules no layer of the lockfile carries, so Lmod must find them elsewhere on MODULEPATH: ${elsewhere.join(", ")}`);
  if (formations.length > 0)
    caveats.push(`defaults name formations, which are not Lmod modules, so the login script loads nothing for them: ${formations.join(", ")}`);
  return { layer: addedLayer(files), modules, caveats };
}
