import type { Command } from "commander";
import { resolve } from "node:path";
import { CairnError, writeFileAtomic } from "../../core/index.ts";
import { applyTemplate } from "../../manifest/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";

interface ApplyTemplateOptions {
  option: string[];
  out?: string;
  json?: boolean;
}

/** `--option NAME=VALUE`, repeatable; the value may hold `=`. */
function collectOption(value: string, previous: string[]): string[] {
  return [...previous, value];
}

function parseOptions(given: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const g of given) {
    const eq = g.indexOf("=");
    if (eq <= 0) throw new CairnError("USAGE", "--option takes NAME=VALUE", { path: "--option" });
    const name = g.slice(0, eq);
    if (out.has(name)) throw new CairnError("USAGE", `--option ${JSON.stringify(name)} is given twice`, { path: "--option" });
    out.set(name, g.slice(eq + 1));
  }
  return out;
}

export function registerManifestApplyTemplate(manifest: Command, ctx: Context): void {
  manifest
    .command("apply-template")
    .description("apply a devcontainer template (devcontainer-template.json + its devcontainer.json) with its options: the file a user of the template has")
    .argument("<template-dir>", "the folder holding devcontainer-template.json and .devcontainer.json or .devcontainer/devcontainer.json")
    .option("--option <name=value>", "a template option's value (repeatable); options not given take the template's default", collectOption, [])
    .option("--out <file>", "write the applied devcontainer.json here (atomically, only on success); default: stdout")
    .option("--json", "print the template id, the options applied and the text as JSON")
    .action((dir: string, opts: ApplyTemplateOptions) => {
      const given = parseOptions(opts.option);
      const r = applyTemplate(resolve(ctx.cwd, dir), given);
      if (opts.out !== undefined) writeFileAtomic(resolve(ctx.cwd, opts.out), r.text, { mode: 0o644 });
      if (opts.json === true) {
        printJson(ctx.io, "cairn.cli.manifest-apply-template/1", { template: r.id, config: r.config, options: r.options, out: opts.out ?? null, text: r.text });
        return;
      }
      const summary = r.options.map((o) => `option    ${o.name} (${o.source === "given" ? "given" : "the template's default"})`);
      if (opts.out === undefined) {
        ctx.io.out(r.text);
        for (const line of summary) ctx.io.err(line);
        return;
      }
      ctx.io.out([`template  ${JSON.stringify(r.id)} (${r.config})`, ...summary, `wrote     ${opts.out}`].join("\n"));
    });
}
