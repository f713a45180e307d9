/** Whether a layer can run on a base: arch and ABI. One definition, used by every stage. */
import type { LockBase } from "../base.ts";
import type { LayerManifest } from "../layer-manifest.ts";

export function archMatches(m: LayerManifest, base: LockBase): boolean {
  return m.arch === "noarch" || m.arch === base.arch;
}

/** `none` layers run anywhere; an unprobed (declared) base cannot refuse an ABI, and the lockfile says it was not probed. */
export function abiMatches(m: LayerManifest, base: LockBase): boolean {
  return m.abi === "none" || base.abi === "unknown" || m.abi === base.abi;
}
