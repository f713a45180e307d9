import type { Command } from "commander";
import { resolve } from "node:path";
import { decodeUtf8, readFileBounded } from "../../core/index.ts";
import {
  DEFAULT_MANIFEST_LIMITS,
  devcontainerLockPath,
  parseDevcontainerLock,
  pinDevcontainer,
  readLockFileState,
  registryPinSources,
} from "../../manifest/index.ts";
import { Store, defaultStoreDir } from "../../store/index.ts";
import type { Context } from "../context.ts";
import { remoteFlags, remoteOptions, type RemoteFlags } from "../remote-flags.ts";
import { printJson } from "../output.ts";

interface ShowOptions extends RemoteFlags {
  lockfile?: string | false;
  store?: string;
  json?: boolean;
}

export function registerManifestShow(manifest: Command, ctx: Context): void {
  remoteFlags(manifest.command("show"))
    .description(
      "show a devcontainer.json's features in the order the devcontainers CLI installs them: the dependsOn closure read from each feature's artifact (contacts the registries named)",
    )
    .argument("<file>", "devcontainer.json (JSONC)")
    .option("--lockfile <file>", "the lockfile whose digests are used, as the devcontainers CLI uses them (default: the one beside the file, when present)")
    .option("--no-lockfile", "resolve every tag now, ignoring a lockfile beside the file")
    .option("--store <dir>", "content store that caches feature artifacts by digest (default $CAIRN_HOME/store or $XDG_CACHE_HOME/cairn/store)")
    .option("--json", "print the install order as JSON")
    .action(async (file: string, opts: ShowOptions) => {
      const path = resolve(ctx.cwd, file);
      const text = decodeUtf8(readFileBounded(path, DEFAULT_MANIFEST_LIMITS.max_input_bytes, "max_input_bytes"), path);
      const lockPath = opts.lockfile === false ? undefined : typeof opts.lockfile === "string" ? resolve(ctx.cwd, opts.lockfile) : devcontainerLockPath(path);
      const state = lockPath === undefined ? undefined : readLockFileState(lockPath);
      const locked = state?.kind === "present" ? parseDevcontainerLock(state.bytes, lockPath!) : undefined;
      const store = new Store(defaultStoreDir(ctx.env, ctx.cwd, opts.store));
      let r: Awaited<ReturnType<typeof pinDevcontainer>>;
      try {
        r = await pinDevcontainer(text, path, registryPinSources(remoteOptions(ctx, opts), store), {
          lockFor: "keep",
          ...(locked === undefined ? {} : { locked }),
        });
      } finally {
        store.close();
      }
      const order = r.closure.order.map((n) => ({
        id: n.userFeatureId,
        kind: n.kind,
        resolved: n.oci === undefined ? null : `${n.oci.ref.registry}/${n.oci.ref.path}@${n.oci.digest}`,
        version: n.oci?.metadata.version ?? null,
        depends_on: n.oci?.metadata.dependsOn.map(([d]) => d) ?? [],
        installs_after: n.installsAfter.map((s) => s.userFeatureId),
        priority: n.roundPriority,
      }));
      if (opts.json === true) return printJson(ctx.io, "cairn.cli.manifest-show/1", { install_order: order, lockfile: locked === undefined ? null : lockPath });
      const lines = ["install order (as the devcontainers CLI computes it):"];
      order.forEach((o, i) => {
        lines.push(`  ${i + 1}. ${o.id}${o.kind === "dependency" ? "  (dependency)" : ""}`);
        if (o.resolved !== null) lines.push(`       ${o.resolved}${o.version === null ? "" : `  version ${o.version}`}`);
        if (o.depends_on.length > 0) lines.push(`       dependsOn ${o.depends_on.join(", ")}`);
        if (o.installs_after.length > 0) lines.push(`       installsAfter ${o.installs_after.join(", ")}`);
      });
      lines.push(locked === undefined ? "lockfile  none: tags resolved now" : `lockfile  ${lockPath}: its digests used`);
      ctx.io.out(lines.join("\n"));
    });
}
