import type { Command } from "commander";
import { diffManifests, loadManifestOrDevcontainer, type CoreDifference, type Loaded } from "../../manifest/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";
import { pinningLabel } from "../manifest-summary.ts";
import { DIFF_DIFFERENT, DIFF_EQUAL, DIFF_EXIT_HELP, diffExitCodes } from "../diff-exit.ts";

function side(l: Loaded): { kind: string; address: string; extension_address: string; pinned: boolean; image_pinned: boolean; unpinned: string[] } {
  const m = l.manifest;
  return { kind: l.kind, address: m.address, extension_address: m.extension_address, pinned: m.pinned, image_pinned: m.image_pinned, unpinned: m.unpinned };
}

/** What equal addresses mean: a claim about bytes only when both sides are pinned. */
const SAME_PINNED = "equal: same address, pinned";
const SAME_UNPINNED = "same declaration, unpinned: not a claim about bytes";

function line(d: CoreDifference): string {
  const mark = d.change === "added" ? "+" : d.change === "removed" ? "-" : "~";
  if (!("a" in d) && !("b" in d)) return `${mark} ${d.path} (value not shown)`;
  const show = (v: unknown): string => JSON.stringify(v);
  if (d.change === "changed") return `${mark} ${d.path}: ${show(d.a)} → ${show(d.b)}`;
  return `${mark} ${d.path}: ${show(d.change === "added" ? d.b : d.a)}`;
}

export function registerManifestDiff(manifest: Command, ctx: Context): void {
  manifest
    .command("diff")
    .description(`field-level differences between two manifests or devcontainer.json files (${DIFF_EXIT_HELP}, a refused devcontainer.json included)`)
    .argument("<a>", "manifest or devcontainer.json")
    .argument("<b>", "manifest or devcontainer.json")
    .option("--features-dir <dir>", "pin the local features of each devcontainer.json input by their directories under DIR (cairn.fs/1)")
    .option("--json", "print the result as JSON")
    .action((fileA: string, fileB: string, opts: { json?: boolean; featuresDir?: string }) => {
      diffExitCodes(ctx);
      const load = { ...(opts.featuresDir === undefined ? {} : { featuresDir: opts.featuresDir }) };
      const a = loadManifestOrDevcontainer(fileA, undefined, load);
      const b = loadManifestOrDevcontainer(fileB, undefined, load);
      const differences = diffManifests(a.manifest, b.manifest);
      const equal = a.manifest.address === b.manifest.address && a.manifest.extension_address === b.manifest.extension_address;
      // Equal addresses mean equal cores, so both sides have one pinning.
      const verdict = !equal ? "different" : a.manifest.pinned ? SAME_PINNED : SAME_UNPINNED;
      ctx.exitCode = equal ? DIFF_EQUAL : DIFF_DIFFERENT;
      if (opts.json) {
        printJson(ctx.io, "cairn.cli.manifest-diff/1", { equal, verdict, a: side(a), b: side(b), differences });
        return;
      }
      const head = (name: string, l: Loaded): string =>
        `${name}: ${l.manifest.address} + extension ${l.manifest.extension_address} (${l.kind === "manifest" ? "manifest file, signature not checked" : "devcontainer.json"}; ${pinningLabel(l.manifest)})`;
      const lines = [head("a", a), head("b", b)];
      if (equal) lines.push(verdict);
      else lines.push(...differences.map(line), `${differences.length} difference(s)`);
      ctx.io.out(lines.join("\n"));
    });
}
