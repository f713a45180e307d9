import type { Command } from "commander";
import {
  buildRegistryIndex,
  indexIsCurrent,
  indexPath,
  openDirectoryRegistry,
  parseRemoveTarget,
  readRegistryIndexBytes,
  readTrust,
  removeFromRegistry,
  writeRegistryIndex,
} from "../../strata/index.ts";
import type { Context } from "../context.ts";
import { collect } from "../flags.ts";
import { printJson } from "../output.ts";

/** `cairn registry index|remove`: maintenance of a directory registry. */
export function registerRegistry(program: Command, ctx: Context): void {
  const registry = program.command("registry").description("maintain a directory layer registry: rebuild or check its index, remove a layer or formation");
  registry
    .command("index")
    .description(
      "rebuild the registry's index (cairn-index.json) from the manifests present, atomically, and report what it found (exit 1 when it found problems; with --check, when the index is not current)",
    )
    .requiredOption("--registry <dir>", "the directory registry")
    .option("--trust <keyfile://PATH>", "refuse unless every manifest's signature verifies against one of these keys (repeatable)", collect, [])
    .option("--check", "only say whether the stored index is current; write nothing")
    .option("--json", "print the result as JSON")
    .action((opts: { registry: string; trust: string[]; check?: boolean; json?: boolean }) => {
      const reg = openDirectoryRegistry(opts.registry, ctx.cwd, "registry index");
      const keys = opts.trust.map((t) => readTrust(t, ctx.cwd));
      const built = buildRegistryIndex(reg, keys);
      const had = readRegistryIndexBytes(reg) !== undefined;
      const current = indexIsCurrent(reg, built.bytes);
      const wrote = opts.check !== true && !current ? writeRegistryIndex(reg, built.bytes) : undefined;
      const stale = opts.check === true && !current;
      ctx.exitCode = built.problems.length > 0 || stale ? 1 : 0;
      if (opts.json) {
        printJson(ctx.io, "cairn.cli.registry-index/1", {
          registry: reg.root,
          index: indexPath(reg),
          layers: built.index.layers.length,
          formations: built.index.formations.length,
          signatures_checked: built.signaturesChecked,
          unreferenced_blobs: built.unreferencedBlobs,
          problems: built.problems,
          current,
          written: wrote !== undefined,
        });
        return;
      }
      const lines = [
        `${reg.root}: ${built.index.layers.length} layer(s), ${built.index.formations.length} formation(s)`,
        keys.length > 0
          ? `signatures  ${built.signaturesChecked} verified against --trust`
          : "signatures  not checked (pass --trust keyfile://PATH to require them)",
      ];
      if (built.unreferencedBlobs.length > 0) lines.push(`unreferenced blobs (no manifest names them): ${built.unreferencedBlobs.join(", ")}`);
      for (const p of built.problems) lines.push(`! ${p.path}: ${p.message}`);
      if (current) lines.push(`index ${indexPath(reg)} is current`);
      else if (wrote !== undefined) lines.push(`wrote ${wrote}`);
      else lines.push(`index ${indexPath(reg)} is ${had ? "stale" : "missing"}: run without --check to rebuild it`);
      ctx.io.out(lines.join("\n"));
    });
  registry
    .command("remove")
    .description(
      "remove a layer (its manifest, and its blob when no other manifest names it) or a formation from a directory registry; a layer a formation still names is refused unless --force",
    )
    .argument("<target>", "a layer id (name-version-abi-arch) or formation:NAME@VERSION")
    .requiredOption("--registry <dir>", "the directory registry (an oci:// registry is refused: cairn does not delete remote content)")
    .option("--force", "remove a layer even though formations in the registry name it (they are listed)")
    .option("--json", "print the result as JSON")
    .action((unsafeTarget: string, opts: { registry: string; force?: boolean; json?: boolean }) => {
      const target = parseRemoveTarget(unsafeTarget);
      const reg = openDirectoryRegistry(opts.registry, ctx.cwd, "registry remove");
      const r = removeFromRegistry(reg, target, { force: opts.force === true });
      if (opts.json) {
        printJson(ctx.io, "cairn.cli.registry-remove/1", {
          removed: r.removed,
          deleted: r.deleted,
          blob_kept: r.blobKept ?? null,
          broken_formations: r.brokenFormations,
          index: r.index ?? null,
        });
        return;
      }
      const lines = [`removed ${r.removed}`, ...r.deleted.map((p) => `  deleted ${p}`)];
      if (r.blobKept) lines.push(`  kept blob ${r.blobKept.sha256}: also named by ${r.blobKept.namedBy.join(", ")}`);
      if (r.brokenFormations.length > 0) lines.push(`  ! --force: ${r.brokenFormations.join(", ")} now name a missing layer`);
      if (r.index) lines.push(`  rewrote ${r.index}`);
      ctx.io.out(lines.join("\n"));
    });
}
