import type { Command } from "commander";
import { Store, defaultStoreDir } from "../../store/index.ts";
import { resolve } from "node:path";
import { archiveToLayout, pullToLayout } from "../../workload/index.ts";
import type { Context } from "../context.ts";
import { remoteFlags, remoteOptions, type RemoteFlags } from "../remote-flags.ts";
import { printJson } from "../output.ts";

export function registerPull(program: Command, ctx: Context): void {
  remoteFlags(program.command("pull"))
    .description("copy an image from an OCI registry (by tag or digest) into a new OCI layout, verified; an index selects linux/amd64")
    .argument("<ref>", "HOST/REPO:TAG, HOST/REPO@sha256:…, or oci-archive:FILE (a tarball of an OCI layout; no network)")
    .requiredOption("--oci <layout>", "the OCI layout directory to write (must not exist, or be empty)")
    .option("--store <dir>", "content store that caches pulled blobs by digest (default $CAIRN_HOME/store or $XDG_CACHE_HOME/cairn/store)")
    .option("--json", "print the result as JSON")
    .action(async (ref: string, opts: RemoteFlags & { oci: string; store?: string; json?: boolean }) => {
      const store = new Store(defaultStoreDir(ctx.env, ctx.cwd, opts.store));
      try {
        if (ref.startsWith("oci-archive:")) {
          const image = await archiveToLayout(resolve(ctx.cwd, ref.slice("oci-archive:".length)), opts.oci, store);
          const result = {
            ref,
            index: null,
            manifest: { media_type: image.manifest.mediaType, digest: image.manifest.digest, size: image.manifest.size },
            platform: "linux/amd64",
            layers: image.layers.length,
            blob_bytes_fetched: 0,
            layout: opts.oci,
          };
          if (opts.json === true) return printJson(ctx.io, "cairn.cli.pull/1", result);
          ctx.io.out(`imported  ${ref}\nmanifest  ${image.manifest.digest} (${image.manifest.mediaType})\nlayout    ${opts.oci}`);
          return;
        }
        const r = await pullToLayout(ref, opts.oci, store, remoteOptions(ctx, opts), {
          log: opts.json === true ? undefined : (line) => ctx.io.err(line),
          progress: ctx.progress,
        });
        const result = {
          ref: r.pinned,
          index: r.image.index?.digest ?? null,
          manifest: { media_type: r.image.manifest.mediaType, digest: r.image.manifest.digest, size: r.image.manifest.size },
          platform: "linux/amd64",
          layers: r.image.layers.length,
          blob_bytes_fetched: r.image.blobBytesFetched,
          layout: opts.oci,
        };
        if (opts.json === true) return printJson(ctx.io, "cairn.cli.pull/1", result);
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
