import type { Command } from "commander";
import { CairnError, readSigningKey, writeFileAtomic } from "../../core/index.ts";
import { resolve } from "node:path";
import {
  applyDevcontainerLock,
  devcontainerLockPath,
  ingestDevcontainer,
  manifestText,
  readLockFileState,
  readManifestInput,
  type AppliedLock,
} from "../../manifest/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";
import { manifestSummary } from "../manifest-summary.ts";

interface IngestOptions {
  sign?: string;
  lockfile?: string | false;
  out?: string;
  featuresDir?: string;
  json?: boolean;
}

export function registerManifestIngest(manifest: Command, ctx: Context): void {
  manifest
    .command("ingest")
    .description("turn a devcontainer.json into an environment manifest (address, pinning labels, optional signature)")
    .argument("<file>", "devcontainer.json (JSONC: comments and trailing commas allowed)")
    .option("--sign <key>", "sign the manifest core with this Ed25519 private key (PEM, from `cairn keygen`)")
    .option("--out <file>", "write the manifest here (atomically, only on success)")
    .option("--features-dir <dir>", "the folder local feature ids (./x) are relative to: each is hashed (cairn.fs/1) and counts as pinned")
    .option(
      "--lockfile <file>",
      "the devcontainers CLI lockfile whose pinned features (and their dependsOn closure) count as pinned (default: devcontainer-lock.json beside the file, .devcontainer-lock.json beside .devcontainer.json, when present)",
    )
    .option("--no-lockfile", "ignore the lockfile beside the file")
    .option("--json", "print the manifest document as JSON")
    .action((file: string, opts: IngestOptions) => {
      // Read the key first: a bad key must fail before anything is written.
      const key = opts.sign === undefined ? undefined : readSigningKey(opts.sign);
      let model = readManifestInput(file);
      const lockPath =
        opts.lockfile === false ? undefined : opts.lockfile !== undefined ? resolve(ctx.cwd, opts.lockfile) : devcontainerLockPath(resolve(ctx.cwd, file));
      const state = lockPath === undefined ? undefined : readLockFileState(lockPath);
      if (typeof opts.lockfile === "string" && state?.kind === "absent") throw new CairnError("IO_ERROR", `${lockPath} does not exist`, { path: lockPath });
      let applied: AppliedLock | undefined;
      if (state?.kind === "present") {
        applied = applyDevcontainerLock(model, lockPath!, state.bytes);
        model = applied.model;
      }
      const { manifest: m, excluded } = ingestDevcontainer(model, {
        ...(key ? { key } : {}),
        ...(opts.featuresDir === undefined ? {} : { featuresDir: opts.featuresDir }),
        ...(applied === undefined ? {} : { featureClosure: { references: applied.closure, resources: applied.closureResources } }),
      });
      const text = manifestText(m);
      // owner-only: an environment manifest holds the configuration's environment values (docs/threat-model.md)
      if (opts.out !== undefined) writeFileAtomic(opts.out, text, { mode: 0o600 });
      if (opts.json) {
        // The manifest has a schema tag of its own (cairn.env-manifest/…): it is printed whole under `manifest`.
        printJson(ctx.io, "cairn.cli.manifest-ingest/1", { manifest: m });
        return;
      }
      const lines = manifestSummary(m);
      if (applied !== undefined)
        lines.push(`lockfile  ${lockPath} ${applied.digest} (${applied.pinned} feature(s) pinned by it, ${applied.closure.length} dependency feature(s))`);
      else if (state?.kind === "empty")
        lines.push(`lockfile  ${lockPath} is empty: the devcontainers CLI's marker to create one (\`cairn manifest pin\` writes it)`);
      if (excluded.length > 0) lines.push(`excluded  ${excluded.join(", ")} (accepted, not in the address)`);
      if (opts.out !== undefined) lines.push(`wrote     ${opts.out}`);
      ctx.io.out(lines.join("\n"));
    });
}
