import type { Command } from "commander";
import { compareBytes } from "../../core/index.ts";
import { defaultStoreDir } from "../../store/index.ts";
import { policyModel, type FsEntry } from "../../tree/index.ts";
import { openVerifiedWorkload, readWorkloadLock } from "../../workload/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";

const TYPE_CHAR = { dir: "d", file: "-", symlink: "l" } as const;

function modeString(e: FsEntry): string {
  const bits = "rwxrwxrwx";
  let out = TYPE_CHAR[e.type];
  for (let i = 0; i < 9; i++) out += e.mode & (1 << (8 - i)) ? bits[i] : "-";
  if (e.mode & 0o1000) out = out.slice(0, 9) + (e.mode & 1 ? "t" : "T");
  return out;
}

/** A name as one line: one with a control character (a newline could forge a listing line) is printed JSON-quoted. */
function printable(name: string): string {
  return /[\u0000-\u001f\u007f]/.test(name) ? JSON.stringify(name) : name;
}

function treeLine(e: FsEntry): string {
  const size = e.type === "file" ? String(e.size) : "-";
  return `${modeString(e)} ${`${e.uid}:${e.gid}`.padEnd(11)} ${size.padStart(10)} ${String(e.mtime).padStart(10)} ${printable(e.path)}${e.type === "symlink" ? ` -> ${printable(e.target)}` : ""}`;
}

export function registerWorkloadShow(parent: Command, ctx: Context): void {
  parent
    .command("show")
    .description("print what a workload lock names; with --tree, verify it against the store and list the canonical tree")
    .argument("<lock>", "workload lock")
    .option("--tree", "verify the lock against the store (as `verify` does) and list every tree entry")
    .option("--store <dir>", "content store for --tree (default $CAIRN_HOME/store or $XDG_CACHE_HOME/cairn/store)")
    .option("--json", "print as JSON")
    .action(async (lockPath: string, opts: { tree?: boolean; store?: string; json?: boolean }) => {
      const l = readWorkloadLock(lockPath);
      const w = opts.tree ? await openVerifiedWorkload(lockPath, defaultStoreDir(ctx.env, ctx.cwd, opts.store)) : undefined;
      const entries = w === undefined ? undefined : [...w.tree.values()].sort((a, b) => compareBytes(a.path, b.path));
      const model = {
        source_kind: l.kind,
        workload: l.identities.workload,
        identities: { source: l.identities.source, fs: l.identities.fs, launch: l.identities.launch },
        policy: policyModel(l.policy),
        raw: l.raw.map((r) => ({ role: r.role, digest: r.digest, size: r.size })),
        derived: l.derived,
        created: l.created,
        cairn_version: l.cairnVersion,
        verified: w !== undefined,
        ...(w === undefined
          ? {}
          : {
              launch: {
                argv: w.launch.argv,
                workdir: w.launch.workdir,
                uid: w.launch.uid,
                gid: w.launch.gid,
                env_names: w.launch.env.map((e) => e.slice(0, e.indexOf("="))),
              },
              tree: entries,
            }),
      };
      if (opts.json) return printJson(ctx.io, "cairn.cli.workload-show/1", model);
      const lines = [
        `${l.kind} workload ${l.identities.workload}${w ? " (verified)" : " (not verified; run `cairn workload verify` or add --tree)"}`,
        `fs        ${l.identities.fs}`,
        `launch    ${l.identities.launch}`,
        `source    ${l.identities.source}`,
        `policy    ${Object.entries(policyModel(l.policy))
          .map(([k, v]) => (k === "version" ? v : `${k}=${v}`))
          .join(" ")}`,
        `derived   ${l.derived.digest} (${l.derived.size} bytes)`,
        `created   ${l.created} by cairn ${l.cairnVersion}`,
        "raw closure:",
        ...l.raw.map((r) => `  ${r.role.padEnd(10)} ${r.digest} ${r.size}`),
      ];
      if (w !== undefined && entries !== undefined) {
        lines.push(
          `launch: argv ${JSON.stringify(w.launch.argv)}, workdir ${w.launch.workdir}, uid:gid ${w.launch.uid}:${w.launch.gid}, env names ${JSON.stringify(w.launch.env.map((e) => e.slice(0, e.indexOf("="))))} (values not shown)`,
          `tree (${entries.length} entries):`,
          ...entries.map(treeLine),
        );
      }
      ctx.io.out(lines.join("\n"));
    });
}
