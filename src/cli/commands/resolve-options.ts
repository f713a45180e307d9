/**
 * `--base`: turning the flag into a probed base. The last non-command helper
 * left under commands/: the wip-tree branch moves OCI base probing into
 * strata, after which this joins the other flag helpers in ../flags.ts.
 */
import { resolve as resolvePath } from "node:path";
import { CairnError } from "../../core/index.ts";
import { directoryView } from "../../tree/index.ts";
import { probeOciBase, probeRoot, probedBase, type LockBase } from "../../strata/index.ts";
import type { Context } from "../context.ts";

/** `--base host | rootfs:DIR | oci:LAYOUT@sha256:DIGEST` → a probed base; undefined means declared. */
export async function probeBaseFlag(ctx: Context, flag: string | undefined, now: Date): Promise<LockBase | undefined> {
  if (flag === undefined) return undefined;
  if (flag === "host") return probedBase(await probeRoot(directoryView("/"), "host"), "host", now);
  if (flag.startsWith("rootfs:")) {
    const dir = resolvePath(ctx.cwd, flag.slice("rootfs:".length));
    return probedBase(await probeRoot(directoryView(dir), dir), `rootfs:${dir}`, now);
  }
  if (flag.startsWith("oci:")) {
    const m = /^(.+)@(sha256:[0-9a-f]{64})$/.exec(flag.slice("oci:".length));
    if (m === null) throw new CairnError("USAGE", "--base oci: needs LAYOUT@sha256:DIGEST (the image manifest digest)");
    return probeOciBase({ layoutDir: resolvePath(ctx.cwd, m[1]!), manifestDigest: m[2]!, now });
  }
  throw new CairnError("USAGE", `--base ${JSON.stringify(flag).slice(0, 60)} is not host, rootfs:DIR or oci:LAYOUT@sha256:DIGEST`);
}
