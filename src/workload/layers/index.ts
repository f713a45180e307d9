export { applyLayers } from "./apply.ts";
export type { ApplyLayersOptions, ApplyResult, ApplyStats, LayerInput } from "./apply.ts";
export { normalizeMemberPath, classifyWhiteout } from "./paths.ts";
export type { WhiteoutKind } from "./paths.ts";
export { IMPLICIT_DIR } from "./model.ts";
