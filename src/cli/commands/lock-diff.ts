import type { Command } from "commander";
import { formatBytes, writeFileAtomic } from "../../core/index.ts";
import { diffLocks, direction, type LayerFacts, type LockDiff, lockDiffHtml, readLockfileUnvalidated } from "../../strata/index.ts";
import type { Context } from "../context.ts";
import { outputPath, printable, printJson } from "../output.ts";
import { DIFF_DIFFERENT, DIFF_EQUAL, DIFF_EXIT_HELP, DIFF_TROUBLE, diffExitCodes } from "../diff-exit.ts";

export function registerLockDiff(lock: Command, ctx: Context): void {
  lock
    .command("diff")
    .description(
      `field-level differences between two lockfiles (${DIFF_EXIT_HELP}; equal means the same EnvironmentID, and a lockfile that breaks a rule is shown with its problems and exits 2); env values are never shown`,
    )
    .argument("<a>", "lockfile")
    .argument("<b>", "lockfile")
    .option("--json", "print the result as JSON")
    .option(
      "--html <out>",
      "also write the diff as one self-contained HTML page (the layer stacks in mount order with sizes, every changed layer and package; no script, nothing loaded)",
    )
    .action((a: string, b: string, opts: { json?: boolean; html?: string }) => {
      diffExitCodes(ctx);
      const html = opts.html !== undefined ? outputPath(ctx.cwd, "--html", opts.html, [a, b]) : undefined;
      // Parsed without Validate, so a lockfile that breaks a rule is shown with its problems instead of refused.
      const la = readLockfileUnvalidated(a);
      const lb = readLockfileUnvalidated(b);
      const d = diffLocks(la.lock, lb.lock, la.problems, lb.problems);
      // An invalid lockfile has no EnvironmentID to compare: trouble, though the diff is shown.
      // written atomically (a temporary file renamed into place): a reader finds the whole page or none
      if (html !== undefined) writeFileAtomic(html, lockDiffHtml(la.lock, lb.lock, d, { a, b }), { mode: 0o644 });
      ctx.exitCode = d.problems_a.length + d.problems_b.length > 0 ? DIFF_TROUBLE : d.same_id ? DIFF_EQUAL : DIFF_DIFFERENT;
      if (opts.json) {
        printJson(ctx.io, "cairn.cli.lock-diff/1", d);
        return;
      }
      const label = (id: string | null, problems: readonly unknown[]): string => id ?? (problems.length > 0 ? "invalid (no EnvironmentID)" : "unfrozen");
      const lines = [`a: ${label(d.id_a, d.problems_a)}`, `b: ${label(d.id_b, d.problems_b)}`, d.same_id ? "same EnvironmentID" : "different EnvironmentID"];
      for (const [side, problems] of [
        ["a", d.problems_a],
        ["b", d.problems_b],
      ] as const) {
        for (const p of problems) lines.push(`! ${side} ${p.path}: [${p.code}] ${p.message}`);
      }
      lines.push(...changeLines(d));
      // names, refs and problem messages come from the lockfiles: one printed line each, escaped
      ctx.io.out(lines.map(printable).join("\n"));
    });
}

const short = (d: string | null): string => (d === null ? "(no digest)" : `${d.slice(0, 19)}…`);
const bytesAt = (f: LayerFacts): string => `${short(f.sha256)} ${formatBytes(f.size)}, mount ${f.mount_order}`;
const turn = (from: string, to: string): string => {
  const dir = direction(from, to);
  return `${from} → ${to}${dir === "same" ? "" : ` (${dir})`}`;
};

/** The model as a person reads it, uv-like: `+ name==ver`, `- name==ver`, `~ name old → new`; then every other field. */
function changeLines(d: LockDiff): string[] {
  const out: string[] = [];
  const section = (title: string, xs: string[]): void => {
    if (xs.length > 0) out.push(title, ...xs.map((x) => `  ${x}`));
  };
  section(
    "layers",
    d.layers.map((l) => {
      const [a, b] = [l.a!, l.b!];
      if (l.change === "added") return `+ ${l.name} ${b.version}  ${bytesAt(b)} (${b.satisfied_by})`;
      if (l.change === "removed") return `- ${l.name} ${a.version}  ${bytesAt(a)}`;
      if (l.change === "version-changed") return `~ ${l.name} ${turn(a.version, b.version)}  ${bytesAt(a)} → ${bytesAt(b)}`;
      if (l.change === "rebuilt") return `~ ${l.name} ${a.version} rebuilt: ${bytesAt(a)} → ${bytesAt(b)}`;
      return `~ ${l.name} ${a.version} moved: mount ${a.mount_order} → ${b.mount_order}`;
    }),
  );
  const versioned = (x: { name: string; change: string; from: string | null; to: string | null }): string =>
    x.change === "added" ? `+ ${x.to}` : x.change === "removed" ? `- ${x.from}` : `~ ${x.from} → ${x.to}`;
  section(
    "formations",
    d.formations.map((f) => versioned({ ...f, from: f.from && `${f.name}@${f.from}`, to: f.to && (f.change === "added" ? `${f.name}@${f.to}` : f.to) })),
  );
  section("defaults", d.defaults.map(versioned));
  for (const set of [...new Set([...d.package_sets.map((s) => s.set), ...d.packages.map((p) => p.set), ...d.requests.map((r) => r.set)])]) {
    const lines: string[] = [];
    for (const s of d.package_sets.filter((x) => x.set === set)) {
      if (s.change === "target-changed") lines.push(`~ target ${s.from_target} → ${s.to_target}`);
      else lines.push(`${s.change === "added" ? "+" : "-"} the whole set`);
    }
    for (const p of d.packages.filter((x) => x.set === set)) {
      const pin = (v: string | null): string => (v === null ? p.name : `${p.name}==${v}`);
      if (p.change === "added") lines.push(`+ ${pin(p.to)}`);
      else if (p.change === "removed") lines.push(`- ${pin(p.from)}`);
      else if (p.change === "version-changed")
        // no upgrade/downgrade label: a package's manager orders its versions by its own rules (pip's 1.0.dev1 is below 1.0), not by cairn's layer version rule
        lines.push(`~ ${p.name} ${p.from ?? "(any)"} → ${p.to ?? "(any)"}`);
      else if (p.change === "digest-changed") lines.push(`~ ${p.name} ${p.to} another archive: ${short(p.from_sha256)} → ${short(p.to_sha256)}`);
      else if (p.change === "pinned") lines.push(`~ ${pin(p.to)} pinned by digest ${short(p.to_sha256)}`);
      else lines.push(`~ ${pin(p.to)} no longer pinned by digest`);
    }
    for (const r of d.requests.filter((x) => x.set === set)) {
      if (r.change === "added") lines.push(`+ request ${r.name} ${r.to ?? "(any version)"}`);
      else if (r.change === "removed") lines.push(`- request ${r.name} ${r.from ?? "(any version)"}`);
      else lines.push(`~ request ${r.name} ${r.from ?? "(any version)"} → ${r.to ?? "(any version)"}`);
    }
    section(`packages ${set}`, lines);
  }
  const mark = { added: "+", removed: "-", changed: "~" } as const;
  const modelled = /^\/(layers|packages|formations|defaults)(\/|$)/;
  section(
    "other",
    d.changes
      .filter((c) => !modelled.test(c.path))
      .map((c) => `${mark[c.change]} ${c.path}${c.change === "changed" ? `: ${c.a} → ${c.b}` : `: ${c.a ?? c.b}`}`),
  );
  return out;
}
