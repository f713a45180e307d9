import type { Command } from "commander";
import { readWorkloadLock } from "../../workload/index.ts";
import type { Context } from "../main.ts";
import { printJson } from "../output.ts";

export function registerWorkloadShow(parent: Command, ctx: Context): void {
  parent
    .command("show")
    .description("print what a workload lock names (checks the lock's own digest; does not verify the store — use verify)")
    .argument("<lock>", "workload lock")
    .option("--json", "print the lock's fields as JSON")
    .action((lockPath: string, opts: { json?: boolean }) => {
      const l = readWorkloadLock(lockPath);
      const model = {
        source_kind: l.kind,
        workload: l.identities.workload,
        identities: { source: l.identities.source, fs: l.identities.fs, launch: l.identities.launch },
        policy: { version: l.policy.version, hardlinks: l.policy.hardlinks, setid: l.policy.setid },
        raw: l.raw.map((r) => ({ role: r.role, digest: r.digest, size: r.size })),
        derived: l.derived,
        created: l.created,
        cairn_version: l.cairnVersion,
        verified: false,
      };
      if (opts.json) return printJson(ctx.io, model);
      const lines = [
        `${l.kind} workload ${l.identities.workload} (not verified; run \`cairn workload verify\`)`,
        `fs        ${l.identities.fs}`,
        `launch    ${l.identities.launch}`,
        `source    ${l.identities.source}`,
        `policy    ${l.policy.version} hardlinks=${l.policy.hardlinks} setid=${l.policy.setid}`,
        `derived   ${l.derived.digest} (${l.derived.size} bytes)`,
        `created   ${l.created} by cairn ${l.cairnVersion}`,
        "raw closure:",
        ...l.raw.map((r) => `  ${r.role.padEnd(10)} ${r.digest} ${r.size}`),
      ];
      ctx.io.out(lines.join("\n"));
    });
}
