import type { Command } from "commander";
import { openRegistries, searchPlatform, searchRegistries, type SearchHit } from "../../strata/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";
import { collect, registryPlace } from "../flags.ts";
import { remoteFlags, type RemoteFlags } from "../remote-flags.ts";

interface SearchOpts extends RemoteFlags {
  registry: string[];
  arch?: string;
  abi?: string;
  formation?: boolean;
  all?: boolean;
  json?: boolean;
}

/** One line of a hit: `name  versions  arches/abis  provides …`, dependency-only layers marked. */
function hitLine(h: SearchHit): string {
  const platform = h.arches.length > 0 ? `  ${h.arches.join(",")}/${h.abis.join(",")}` : "";
  const provides = h.provides.length > 0 ? `  provides ${h.provides.join(", ")}` : "";
  return `${h.kind === "formation" ? "formation:" : ""}${h.name}  ${h.versions.join(", ")}${platform}${provides}${h.user_selectable ? "" : "  (dependency-only)"}`;
}

/** `cairn search TERM [--registry REG]… [--arch ARCH] [--abi ABI] [--formation] [--all]`. */
export function registerSearch(program: Command, ctx: Context): void {
  remoteFlags(program.command("search"))
    .description("list layers and formations whose name contains TERM, with their versions, arches and ABIs")
    .argument("<term>", "part of a name ('' lists everything)")
    .option(
      "--registry <dir>",
      "a directory registry or oci://HOST/REPO (repeatable; default $CAIRN_HOME/registry or $XDG_DATA_HOME/cairn/registry)",
      collect,
      [],
    )
    .option("--arch <arch>", "only what runs on this arch (noarch layers run on every arch; arm64 and amd64 are read as aarch64 and x86_64)")
    .option("--abi <abi>", "only what runs on this ABI: none, gnu, musl (abi none layers run on every ABI)")
    .option("--formation", "list formations only")
    .option("--all", "include dependency-only layers (not user-selectable), marked as such")
    .option("--json", "print the result as JSON")
    .action(async (term: string, opts: SearchOpts) => {
      const platform = searchPlatform({ arch: opts.arch, abi: opts.abi });
      const regs = await openRegistries({ ...registryPlace(ctx, opts), registries: opts.registry, trust: [] });
      const hits = searchRegistries(
        regs.map((r) => r.registry),
        term,
        { ...platform, formationsOnly: opts.formation === true, all: opts.all === true },
      );
      if (opts.json) {
        printJson(ctx.io, "cairn.cli.search/1", { hits });
        return;
      }
      if (hits.length === 0) {
        ctx.io.out(`nothing matches ${JSON.stringify(term)}`);
        return;
      }
      ctx.io.out(hits.map(hitLine).join("\n"));
    });
}
