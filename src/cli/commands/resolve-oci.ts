/** `--base oci:LAYOUT@sha256:DIGEST`: placeholder replaced once the workload OCI reader is wired in. */
import { CairnError } from "../../core/index.ts";
import type { LockBase } from "../../strata/index.ts";
import type { Context } from "../main.ts";

export async function probeOciBase(_ctx: Context, _spec: string, _now: Date): Promise<LockBase> {
  throw new CairnError("PREREQUISITE_MISSING", "--base oci: is not wired in yet", { hint: "use --base host or --base rootfs:DIR" });
}
