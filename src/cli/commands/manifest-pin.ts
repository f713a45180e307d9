import type { Command } from "commander";
import { resolve } from "node:path";
import { CairnError, decodeUtf8, readFileBounded, writeFileAtomic } from "../../core/index.ts";
import {
  checkFrozenLock,
  DEFAULT_MANIFEST_LIMITS,
  devcontainerLockPath,
  devcontainerLockText,
  parseDevcontainerLock,
  pinDevcontainer,
  readLockFileState,
  registryPinSources,
} from "../../manifest/index.ts";
import { Store, defaultStoreDir } from "../../store/index.ts";
import type { Context } from "../context.ts";
import { remoteFlags, remoteOptions, type RemoteFlags } from "../remote-flags.ts";
import { printJson } from "../output.ts";

interface PinOptions extends RemoteFlags {
  write?: boolean;
  lockfileOnly?: boolean;
  frozenLockfile?: boolean;
  lockfile?: string;
  store?: string;
  json?: boolean;
}

export function registerManifestPin(manifest: Command, ctx: Context): void {
  remoteFlags(manifest.command("pin"))
    .description(
      "resolve the image tag and every OCI feature tag of a devcontainer.json to digests, with the dependsOn closure in the devcontainers CLI's lockfile (contacts the registries named)",
    )
    .argument("<file>", "devcontainer.json (JSONC)")
    .option("--write", "rewrite the file in place (atomically) and write the lockfile beside it, keyed by the rewritten ids; default: print the pinned file")
    .option(
      "--lockfile-only",
      "write only the lockfile, keyed by the ids as the file writes them, and leave the file as it is (what `devcontainer upgrade` does)",
    )
    .option("--frozen-lockfile", "resolve at the lockfile's digests and fail (exit 1) if the lockfile would change; writes nothing")
    .option("--lockfile <file>", "the lockfile (default devcontainer-lock.json beside the file, .devcontainer-lock.json beside .devcontainer.json)")
    .option("--store <dir>", "content store that caches feature artifacts by digest (default $CAIRN_HOME/store or $XDG_CACHE_HOME/cairn/store)")
    .option("--json", "print what changed as JSON")
    .action(async (file: string, opts: PinOptions) => {
      const modes = [opts.write, opts.lockfileOnly, opts.frozenLockfile].filter((m) => m === true).length;
      if (modes > 1) throw new CairnError("USAGE", "--write, --lockfile-only and --frozen-lockfile exclude each other", { path: "--frozen-lockfile" });
      const path = resolve(ctx.cwd, file);
      const text = decodeUtf8(readFileBounded(path, DEFAULT_MANIFEST_LIMITS.max_input_bytes, "max_input_bytes"), path);
      const lockPath = opts.lockfile !== undefined ? resolve(ctx.cwd, opts.lockfile) : devcontainerLockPath(path);
      const state = readLockFileState(lockPath);
      const frozen = opts.frozenLockfile === true;
      const locked = frozen && state.kind === "present" ? parseDevcontainerLock(state.bytes, lockPath) : undefined;
      // an empty lockfile is the devcontainers CLI's marker for "write the lock here" (for the file as it is)
      const lockOnly = opts.lockfileOnly === true || (opts.write !== true && !frozen && state.kind === "empty");
      const store = new Store(defaultStoreDir(ctx.env, ctx.cwd, opts.store));
      let r: Awaited<ReturnType<typeof pinDevcontainer>>;
      try {
        r = await pinDevcontainer(text, path, registryPinSources(remoteOptions(ctx, opts), store), {
          lockFor: opts.write === true ? "rewrite" : "keep",
          ...(locked === undefined ? {} : { locked }),
        });
      } finally {
        store.close();
      }
      if (frozen) checkFrozenLock(state, r.lock, lockPath);
      const lockText = devcontainerLockText(r.lock);
      if (opts.write === true) writeFileAtomic(path, r.text, { mode: 0o644 });
      const lockWritten = opts.write === true || lockOnly;
      if (lockWritten) writeFileAtomic(lockPath, lockText, { mode: 0o644 });
      const order = r.closure.order.map((n) => ({ id: n.userFeatureId, kind: n.kind, digest: n.oci?.digest ?? null }));
      if (opts.json === true) {
        return printJson(ctx.io, "cairn.cli.manifest-pin/1", {
          changes: frozen || lockOnly ? [] : r.changes,
          unpinnable: r.unpinnable,
          lockfile: lockWritten ? lockPath : null,
          lock: r.lock,
          install_order: order,
          written: opts.write === true,
          frozen,
        });
      }
      if (frozen) {
        ctx.io.out(`unchanged ${lockPath} (${Object.keys(r.lock.features).length} feature(s), frozen)`);
      } else if (opts.write !== true && !lockOnly) {
        ctx.io.out(r.text);
        for (const c of r.changes) ctx.io.err(`pinned ${c.path}: ${c.from} -> ${c.to}`);
      } else {
        const lines = opts.write === true ? r.changes.map((c) => `pinned    ${c.path}: ${c.from} -> ${c.to}`) : [];
        for (const u of r.unpinnable) lines.push(`left      ${u.path}: ${u.why}`);
        if (opts.write === true) lines.push(`wrote     ${path}`);
        lines.push(`wrote     ${lockPath}`);
        ctx.io.out(lines.join("\n"));
      }
    });
}
