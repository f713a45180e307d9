// The public library surface of cairn: one namespace per area, each a curated
// list (see <area>/public.ts), also reachable as `cairn/<area>`. The typed
// error is at the root too, since every caller catches it. The checked-in
// report api/cairn.api.md lists every name; a test fails when it drifts.
export * as core from "./core/public.ts";
export * as tree from "./tree/public.ts";
export * as oci from "./oci/public.ts";
export * as store from "./store/public.ts";
export * as manifest from "./manifest/public.ts";
export * as strata from "./strata/public.ts";
export * as workload from "./workload/public.ts";
export * as vm from "./vm/public.ts";
export { CairnError, isCairnError } from "./core/public.ts";
export type { ErrorCode } from "./core/public.ts";
