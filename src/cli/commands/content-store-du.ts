import type { Command } from "commander";
import { defaultStoreDir, Store, storeUsage } from "../../store/index.ts";
import { collectStoreGarbage } from "../../vm/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";

export function registerStoreDu(parent: Command, ctx: Context): void {
  parent
    .command("du")
    .description("show what uses the store's space, by area, and how much `cairn store gc` would free")
    .option("--store <dir>", "content store (default $CAIRN_HOME/store or $XDG_CACHE_HOME/cairn/store)")
    .option("--json", "print the result as JSON")
    .action((opts: { store?: string; json?: boolean }) => {
      const storeDir = defaultStoreDir(ctx.env, ctx.cwd, opts.store);
      const usage = storeUsage(new Store(storeDir, { write: false }));
      const gc = collectStoreGarbage({ storeDir, cwd: ctx.cwd, dryRun: true });
      const total = Object.values(usage.areas).reduce((n, t) => n + t.bytes, 0) + usage.staging.bytes;
      if (opts.json) {
        return printJson(ctx.io, "cairn.cli.store-du/1", {
          areas: usage.areas,
          staging: usage.staging,
          roots: usage.roots,
          total_bytes: total,
          reclaimable_bytes: gc.freedBytes,
        });
      }
      const row = (name: string, t: { files: number; bytes: number }) =>
        `${name.padEnd(26)}${String(t.files).padStart(8)} files ${String(t.bytes).padStart(14)} bytes`;
      ctx.io.out(
        [
          row("objects (raw, layers)", usage.areas.objects),
          row("derived entries", usage.areas.derived),
          row("content packs", usage.areas.packs),
          row("pack records", usage.areas["derived-packs"]),
          row("verify memos", usage.areas.verified),
          row("staging", usage.staging),
          `total ${total} bytes; ${usage.roots} recorded locks; gc would free ${gc.freedBytes} bytes`,
        ].join("\n"),
      );
    });
}
