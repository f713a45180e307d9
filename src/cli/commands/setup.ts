import type { Command } from "commander";
import { kitDir, setupKit } from "../../vm/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";

export function registerSetup(program: Command, ctx: Context): void {
  program
    .command("setup")
    .description(
      "prepare the guest kit for runs: install QEMU and the C toolchain if missing (as root), build the guest agent reproducibly, fetch Debian's cloud kernel",
    )
    .option("--kit <dir>", "kit directory (default $CAIRN_KIT, $CAIRN_HOME/kit or $XDG_CACHE_HOME/cairn/kit)")
    .option("--kernel-deb <file>", "use this local Debian cloud kernel package (.deb) instead of downloading one")
    .option("--refresh-kernel", "fetch the kernel again even when the kit has one")
    .option("--json", "print the kit as JSON")
    .action(async (opts: { kit?: string; kernelDeb?: string; refreshKernel?: boolean; json?: boolean }) => {
      const kit = await setupKit({
        dir: kitDir(ctx.env, ctx.cwd, opts.kit),
        kernelDeb: opts.kernelDeb,
        refreshKernel: opts.refreshKernel === true,
        isRoot: process.getuid?.() === 0,
        log: (line) => ctx.io.err(`cairn setup: ${line}`),
      });
      if (opts.json) printJson(ctx.io, "cairn.cli.setup/1", kit);
      else {
        ctx.io.out(
          [
            `kit      ${kit.dir}`,
            `qemu     ${kit.qemu}`,
            `kernel   ${kit.kernel.digest} (${kit.kernel.file}, ${kit.kernel.package})`,
            `modules  ${kit.kernel.modules.map((m) => m.name).join(" ")}`,
            `agent    ${kit.agent.digest} (${kit.agent.compiler}, two builds byte-identical)`,
          ].join("\n"),
        );
      }
    });
}
