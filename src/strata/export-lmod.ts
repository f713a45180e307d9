/**
 * The Lmod part of a lock export: one added layer (export-layer.ts) holding
 *
 *   /opt/cairn/modulefiles/NAME/VERSION.lua   each layer's modulefile, the
 *       bytes the lockfile pins (read out of the verified layer blob and
 *       checked against the lockfile's `modulefile.sha256`);
 *   /etc/profile.d/z-cairn-lmod.sh            the login script: `module use`
 *       of that tree, then `module load` of the profile's `defaults` when they
 *       are Strata's preload list.
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
 * Nothing here runs Lmod or a modulefile; module names in `defaults` were
 * checked against MODULE_NAME and are checked again by lmodLoginScript.
 */
import { CairnError, type Sha256Digest } from "../core/index.ts";
import type { LayoutLayerInput } from "../oci/index.ts";
import { readLayerBlobs } from "./blob-reader.ts";
import { addedLayer, type AddedFile } from "./export-layer.ts";
import type { Lockfile } from "./lockfile.ts";
import { defaultModules, LMOD_LOGIN_SCRIPT, lmodLoginScript } from "./modulefile.ts";

/** The Lmod tree an export writes, relative to the image root (`module use /opt/cairn/modulefiles`). */
export const EXPORT_MODULE_ROOT = "opt/cairn/modulefiles";

export interface LmodExport {
  readonly layer: LayoutLayerInput;
  /** `NAME/VERSION` of each modulefile written, in mount order. */
  readonly modules: readonly string[];
  readonly caveats: readonly string[];
}

/** The defaults as Lmod module names (`name/version`, or `name` for a ref without a version). */
function preloadList(lock: Lockfile): readonly string[] {
  return defaultModules(lock.defaults);
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
  const preload = preloadList(lock);
  const carriers = order.filter((i) => lock.layers[i]!.modulefile !== undefined);
  if (carriers.length === 0 && preload.length === 0) return undefined;
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
  const names = new Set(modules.map((m) => m.split("/")[0]!));
  const elsewhere = preload.filter((d) => !(d.includes("/") ? modules.includes(d) : names.has(d)));
  if (elsewhere.length > 0)
    caveats.push(`defaults name modules no layer of the lockfile carries, so Lmod must find them elsewhere on MODULEPATH: ${elsewhere.join(", ")}`);
  return { layer: addedLayer(files), modules, caveats };
}
