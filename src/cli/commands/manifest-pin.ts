import type { Command } from "commander";
import { dirname, join, resolve } from "node:path";
import { readFileBounded, writeFileAtomic, decodeUtf8 } from "../../core/index.ts";
import { DEFAULT_MANIFEST_LIMITS, lockfileText, pinDevcontainer, registryResolver } from "../../manifest/index.ts";
import type { Context } from "../context.ts";
import { remoteFlags, remoteOptions, type RemoteFlags } from "../remote-flags.ts";
import { printJson } from "../output.ts";

interface PinOptions extends RemoteFlags {
  write?: boolean;
  lockfile?: string;
  json?: boolean;
}

export function registerManifestPin(manifest: Command, ctx: Context): void {
  remoteFlags(manifest.command("pin"))
    .description("resolve the image tag and every OCI feature tag of a devcontainer.json to digests (contacts the registries named)")
    .argument("<file>", "devcontainer.json (JSONC)")
    .option("--write", "rewrite the file in place (atomically) and write devcontainer-lock.json beside it; default: print the pinned file")
    .option("--lockfile <file>", "where --write puts the lockfile (default devcontainer-lock.json beside the file)")
    .option("--json", "print what changed as JSON")
    .action(async (file: string, opts: PinOptions) => {
      const path = resolve(ctx.cwd, file);
      const text = decodeUtf8(readFileBounded(path, DEFAULT_MANIFEST_LIMITS.max_input_bytes, "max_input_bytes"), path);
      const r = await pinDevcontainer(text, path, registryResolver(remoteOptions(ctx, opts)));
      const lockPath = opts.lockfile !== undefined ? resolve(ctx.cwd, opts.lockfile) : join(dirname(path), "devcontainer-lock.json");
      if (opts.write === true) {
        writeFileAtomic(path, r.text, { mode: 0o644 });
        writeFileAtomic(lockPath, lockfileText(r.lock), { mode: 0o644 });
      }
      if (opts.json === true) {
        return printJson(ctx.io, {
          changes: r.changes,
          unpinnable: r.unpinnable,
          lockfile: opts.write === true ? lockPath : null,
          lock: r.lock,
          written: opts.write === true,
        });
      }
      if (opts.write !== true) {
        ctx.io.out(r.text);
        for (const c of r.changes) ctx.io.err(`pinned ${c.path}: ${c.from} -> ${c.to}`);
      } else {
        const lines = r.changes.map((c) => `pinned    ${c.path}: ${c.from} -> ${c.to}`);
        for (const u of r.unpinnable) lines.push(`left      ${u.path}: ${u.why}`);
        lines.push(`wrote     ${path}`, `wrote     ${lockPath}`);
        ctx.io.out(lines.join("\n"));
      }
    });
}
