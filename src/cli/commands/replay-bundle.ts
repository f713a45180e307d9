import type { Command } from "commander";
import { resolve } from "node:path";
import { CairnError } from "../../core/index.ts";
import { defaultStoreDir } from "../../store/index.ts";
import { bundleKit, kitDir, writeRunBundle } from "../../vm/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";
import { registerBundlePush } from "./replay-bundle-push.ts";

/** `cairn bundle RUNDIR --out run.cairn`: one deterministic file that replays anywhere (vm/run-bundle.ts). */
export function registerBundle(program: Command, ctx: Context): void {
  const bundle = program.command("bundle");
  registerBundlePush(bundle, ctx);
  bundle
    .description(
      "write a replay bundle: one deterministic tar with the run, the workload's raw closure and lock, and the kernel, modules and agent its VM names",
    )
    .argument("<run-dir>", "a run directory written by `cairn run`")
    // not commander's requiredOption: commander would then ask it of `bundle push` too
    .option("--out <file>", "the bundle to write (run.cairn); required")
    .option("--store <dir>", "content store (default $CAIRN_HOME/store or $XDG_CACHE_HOME/cairn/store)")
    .option("--kit <dir>", "guest kit (default $CAIRN_KIT, $CAIRN_HOME/kit or $XDG_CACHE_HOME/cairn/kit)")
    .option("--include-private", "also put the exact output streams, console log and protocol stream in (the file is then owner-only)")
    .option(
      "--include-inputs",
      "also put the run's inputs in (the host files its run.inputs named; the file is then owner-only); without it a replay elsewhere needs them in its own store",
    )
    .option("--json", "print the result as JSON")
    .action((runDir: string, opts: { out?: string; store?: string; kit?: string; includePrivate?: boolean; includeInputs?: boolean; json?: boolean }) => {
      if (opts.out === undefined) throw new CairnError("USAGE", "error: required option '--out <file>' not specified", { path: "--out" });
      const dir = resolve(ctx.cwd, runDir);
      const r = writeRunBundle({
        runDir: dir,
        storeDir: defaultStoreDir(ctx.env, ctx.cwd, opts.store),
        kit: bundleKit(kitDir(ctx.env, ctx.cwd, opts.kit), dir),
        out: resolve(ctx.cwd, opts.out),
        includePrivate: opts.includePrivate === true,
        includeInputs: opts.includeInputs === true,
      });
      const parts = r.members.reduce((n, m) => n + m.size, 0);
      if (opts.json)
        printJson(ctx.io, "cairn.cli.bundle/1", {
          bundle: r.file,
          bytes: r.size,
          members: r.members.length,
          member_bytes: parts,
          // a branch's bundle holds its start snapshot and stream prefix, private, with or without --include-private
          private: opts.includePrivate === true || r.branch,
          inputs: r.inputs,
        });
      else {
        ctx.io.out(
          `wrote ${r.file}: ${r.size} bytes, ${r.members.length} members (${parts} bytes of content)${opts.includePrivate ? ", private streams included" : ""}${r.inputs === "included" ? ", run inputs included" : ""}`,
        );
        if (r.branch)
          ctx.io.out(
            "a branch: its start snapshot (the guest's RAM) and the parent's stream prefix (output bytes) are in the bundle, which its replay needs; the file is owner-only: mind who you give it to",
          );
        if (r.inputs === "left-out")
          ctx.io.out(
            "run inputs left out: they are host files the spec named; a replay elsewhere refuses before launch unless its store holds them (bundle again with --include-inputs to carry them)",
          );
      }
    });
}
