/** Whether a layer can run on a base: arch and ABI. One definition, used by every stage and by `search`'s filters. */
import type { LockBase } from "../base.ts";
import type { Abi, LayerArch, LayerManifest } from "../layer-manifest.ts";
import type { Arch } from "../platform.ts";

/** A `noarch` layer holds no machine code and runs on every arch. */
export function archRuns(layerArch: LayerArch, arch: Arch): boolean {
  return layerArch === "noarch" || layerArch === arch;
}

/** An abi `none` layer holds no native code and runs on every ABI. */
export function abiRuns(layerAbi: Abi, abi: Abi): boolean {
  return layerAbi === "none" || layerAbi === abi;
}

export function archMatches(m: LayerManifest, base: LockBase): boolean {
  return archRuns(m.arch, base.arch);
}

/** `none` layers run anywhere; an unprobed (declared) base cannot refuse an ABI, and the lockfile says it was not probed. */
export function abiMatches(m: LayerManifest, base: LockBase): boolean {
  return base.abi === "unknown" || abiRuns(m.abi, base.abi);
}
