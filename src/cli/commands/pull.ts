import type { Command } from "commander";
import { CairnError } from "../../core/index.ts";
import { Store, defaultStoreDir } from "../../store/index.ts";
import { pullToLayout } from "../../workload/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";

/** The flags every command that may contact a registry takes. */
export interface RemoteFlags {
  plainHttp?: boolean;
  allowInsecureRemote?: boolean;
  maxManifestBytes?: string;
}

function positiveInt(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[1-9][0-9]{0,14}$/.test(value)) throw new CairnError("USAGE", `${flag} must be a positive integer`, { path: flag });
  return Number(value);
}

export function registerPull(program: Command, ctx: Context): void {
  program
    .command("pull")
    .description("copy an image from an OCI registry (by tag or digest) into a new OCI layout, verified; an index selects linux/amd64")
    .argument("<ref>", "HOST/REPO:TAG or HOST/REPO@sha256:…")
    .requiredOption("--oci <layout>", "the OCI layout directory to write (must not exist, or be empty)")
    .option("--store <dir>", "content store that caches pulled blobs by digest (default $CAIRN_HOME/store or $XDG_CACHE_HOME/cairn/store)")
    .option("--plain-http", "speak http instead of https (loopback registries only, unless --allow-insecure-remote)")
    .option("--allow-insecure-remote", "allow --plain-http to a registry that is not on loopback")
    .option("--max-manifest-bytes <n>", "limit manifestBytes: a manifest larger than this is refused before it is read (default 4194304)")
    .option("--json", "print the result as JSON")
    .action(async (ref: string, opts: RemoteFlags & { oci: string; store?: string; json?: boolean }) => {
      const store = new Store(defaultStoreDir(ctx.env, ctx.cwd, opts.store));
      try {
        const r = await pullToLayout(
          ref,
          opts.oci,
          store,
          {
            plainHttp: opts.plainHttp,
            allowInsecureRemote: opts.allowInsecureRemote,
            manifestBytes: positiveInt(opts.maxManifestBytes, "--max-manifest-bytes"),
            env: ctx.env,
            cwd: ctx.cwd,
          },
          opts.json === true ? undefined : (line) => ctx.io.err(line),
        );
        const result = {
          ref: r.pinned,
          index: r.image.index?.digest ?? null,
          manifest: { media_type: r.image.manifest.mediaType, digest: r.image.manifest.digest, size: r.image.manifest.size },
          platform: "linux/amd64",
          layers: r.image.layers.length,
          blob_bytes_fetched: r.image.blobBytesFetched,
          layout: opts.oci,
        };
        if (opts.json === true) return printJson(ctx.io, result);
        ctx.io.out(
          [
            `pulled    ${r.pinned}`,
            `manifest  ${r.image.manifest.digest} (${r.image.manifest.mediaType})`,
            `layers    ${r.image.layers.length} (${r.image.blobBytesFetched} bytes fetched, the rest from the store)`,
            `layout    ${opts.oci}`,
          ].join("\n"),
        );
      } finally {
        store.close();
      }
    });
}
