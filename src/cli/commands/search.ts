import type { Command } from "commander";
import { openRegistries, searchRegistries } from "../../strata/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";
import { collect, registryPlace } from "../flags.ts";
import { remoteFlags, type RemoteFlags } from "../remote-flags.ts";

/** `cairn search TERM --registry REG`. */
export function registerSearch(program: Command, ctx: Context): void {
  remoteFlags(program.command("search"))
    .description("list user-selectable layers and formations whose name contains TERM, with their versions")
    .argument("<term>", "part of a name ('' lists everything)")
    .option(
      "--registry <dir>",
      "a directory registry or oci://HOST/REPO (repeatable; default $CAIRN_HOME/registry or $XDG_DATA_HOME/cairn/registry)",
      collect,
      [],
    )
    .option("--json", "print the result as JSON")
    .action(async (term: string, opts: RemoteFlags & { registry: string[]; json?: boolean }) => {
      const regs = await openRegistries({ ...registryPlace(ctx, opts), registries: opts.registry, trust: [] });
      const hits = searchRegistries(
        regs.map((r) => r.registry),
        term,
      );
      if (opts.json) {
        printJson(ctx.io, { hits });
        return;
      }
      if (hits.length === 0) {
        ctx.io.out(`nothing matches ${JSON.stringify(term)}`);
        return;
      }
      ctx.io.out(
        hits
          .map(
            (h) =>
              `${h.kind === "formation" ? "formation:" : ""}${h.name}  ${h.versions.join(", ")}${h.provides.length ? `  provides ${h.provides.join(", ")}` : ""}`,
          )
          .join("\n"),
      );
    });
}
