import type { Command } from "commander";
import { CairnError } from "../../core/index.ts";
import { defaultStoreDir } from "../../store/index.ts";
import { collectStoreGarbage } from "../../vm/index.ts";
import type { Context } from "../context.ts";
import { collect } from "../flags.ts";
import { printJson } from "../output.ts";

export function registerStoreGc(parent: Command, ctx: Context): void {
  parent
    .command("gc")
    .description(
      "remove what no kept lock needs: kept are the locks the store recorded (assembled or verified, while the file exists), --keep-lock files and the runs under --keep-runs",
    )
    .option("--store <dir>", "content store (default $CAIRN_HOME/store or $XDG_CACHE_HOME/cairn/store)")
    .option("--keep-lock <file>", "also keep this workload lock's closure (repeatable)", collect, [])
    .option("--keep-runs <dir>", "also keep every run in this runs directory, or this run directory (repeatable)", collect, [])
    .option("--drop-packs", "remove content packs too: a replay's preflight rebuilds them from the kept compressed layers")
    .option("--dry-run", "report what would be removed, remove nothing")
    .option("--wait <seconds>", "how long to wait for running assemblies and verifies (default 60)")
    .option("--json", "print the result as JSON")
    .action((opts: { store?: string; keepLock: string[]; keepRuns: string[]; dropPacks?: boolean; dryRun?: boolean; wait?: string; json?: boolean }) => {
      const waitS = opts.wait === undefined ? 60 : Number(opts.wait);
      if (!Number.isSafeInteger(waitS) || waitS < 0) throw new CairnError("USAGE", "--wait must be a whole number of seconds", { path: "--wait" });
      const r = collectStoreGarbage({
        storeDir: defaultStoreDir(ctx.env, ctx.cwd, opts.store),
        cwd: ctx.cwd,
        keepLocks: opts.keepLock,
        keepRuns: opts.keepRuns,
        dryRun: opts.dryRun === true,
        dropPacks: opts.dropPacks === true,
        waitMs: waitS * 1000,
        progress: ctx.progress,
      });
      if (opts.json) {
        return printJson(ctx.io, "cairn.cli.store-gc/1", {
          dry_run: r.dryRun,
          roots: { kept: r.roots.kept, stale: r.roots.stale, unreadable: r.roots.unreadable },
          removed: r.removed,
          kept: r.kept,
          freed_bytes: r.freedBytes,
        });
      }
      const n = (t: { files: number }) => t.files;
      ctx.io.out(
        `${r.dryRun ? "would remove" : "removed"} ${n(r.removed.objects)} objects, ${n(r.removed.derived)} derived entries, ${n(r.removed.packs)} content packs: ${r.freedBytes} bytes ${r.dryRun ? "would be " : ""}freed`,
      );
      ctx.io.out(`kept ${r.roots.kept} locks' closures; ${r.roots.stale} recorded locks were gone${r.dryRun ? "" : " (records dropped)"}`);
      for (const u of r.roots.unreadable) ctx.io.out(`unreadable recorded lock (nothing kept for it): ${u}`);
    });
}
