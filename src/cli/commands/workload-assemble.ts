import type { Command } from "commander";
import { defaultStoreDir } from "../../store/index.ts";
import { assembleWorkload, defaultKeysDir, type PolicyListing } from "../../workload/index.ts";
import type { Context } from "../context.ts";
import { remoteFlags, remoteOptions, type RemoteFlags } from "../remote-flags.ts";
import { printJson } from "../output.ts";
import { CAIRN_VERSION } from "../cairn-version.ts";
import { inputsRootFlag, INPUTS_ROOT_HELP } from "../flags.ts";

/** Listed members shown (the rest counted), like the issues of a refusal. */
const MAX_LISTED = 100;

/** A path as one line: one with a control character (a newline could forge a line) is printed JSON-quoted. */
function printable(s: string): string {
  return /[\u0000-\u001f\u007f]/.test(s) ? JSON.stringify(s) : s;
}

/** What the policy left out or dropped, listed (devices: skip, xattrs: drop). */
function listing(l: PolicyListing): string[] {
  const out: string[] = [];
  if (l.skipped.length > 0) {
    out.push(`left out  ${l.skipped.length} device node(s) and FIFO(s) (policy devices: skip):`);
    for (const s of l.skipped.slice(0, MAX_LISTED))
      out.push(`  /layers/${s.layer}:${printable(s.path)} ${s.type}${s.device ? ` ${s.device.major}:${s.device.minor}` : ""}`);
    if (l.skipped.length > MAX_LISTED) out.push(`  … and ${l.skipped.length - MAX_LISTED} more`);
  }
  if (l.droppedXattrs.length > 0) {
    out.push(`dropped   the xattrs of ${l.droppedXattrs.length} member(s) (policy xattrs: drop):`);
    for (const x of l.droppedXattrs.slice(0, MAX_LISTED)) out.push(`  /layers/${x.layer}:${printable(x.path)} ${x.names.map(printable).join(", ")}`);
    if (l.droppedXattrs.length > MAX_LISTED) out.push(`  … and ${l.droppedXattrs.length - MAX_LISTED} more`);
  }
  return out;
}

export function registerWorkloadAssemble(parent: Command, ctx: Context): void {
  remoteFlags(parent.command("assemble"))
    .description("assemble a workload spec into the content store and write its private workload lock")
    .argument("<spec>", "workload spec (cairn.workload/1, YAML or JSON)")
    .option("--store <dir>", "content store (default $CAIRN_HOME/store or $XDG_CACHE_HOME/cairn/store)")
    .option("--lock-out <file>", "where to write the lock (default <spec name>.lock.json beside the spec)")
    .option("--keys <dir>", "verify memo key directory (default $CAIRN_HOME/keys or $XDG_DATA_HOME/cairn/keys)")
    .option("--no-memo", "write no verify memo: the first verify of the lock on this machine re-derives it")
    .option("--inputs-root <dir>", INPUTS_ROOT_HELP)
    .option("--json", "print the result as JSON")
    .action(
      async (spec: string, opts: RemoteFlags & { store?: string; lockOut?: string; keys?: string; memo: boolean; json?: boolean; inputsRoot?: string }) => {
        const r = await assembleWorkload({
          specPath: spec,
          storeDir: defaultStoreDir(ctx.env, ctx.cwd, opts.store),
          lockOut: opts.lockOut,
          cairnVersion: CAIRN_VERSION,
          log: ctx.io.tty && opts.json !== true ? (line) => ctx.io.err(line) : undefined,
          progress: ctx.progress,
          remote: remoteOptions(ctx, opts),
          memoKeyDir: opts.memo ? defaultKeysDir(ctx.env, ctx.cwd, opts.keys) : undefined,
          ...(opts.inputsRoot !== undefined ? { hostRoot: inputsRootFlag(ctx.cwd, opts.inputsRoot) } : {}),
        });
        const result = {
          source_kind: r.kind,
          workload: r.identities.workload,
          identities: { source: r.identities.source, fs: r.identities.fs, launch: r.identities.launch },
          derived: r.derivedDigest,
          lock: r.lockPath,
          sizes: { entries: r.entries, files: r.files, tree_bytes: r.treeBytes, raw_bytes: r.rawBytes },
          duration_ms: r.durationMs,
          ...(r.memo !== undefined ? { memo_written: r.memo.written, ...(r.memo.written ? {} : { memo_not_written: r.memo.why }) } : {}),
          ...(r.listing.skipped.length > 0 ? { skipped: r.listing.skipped.slice(0, MAX_LISTED), skipped_count: r.listing.skipped.length } : {}),
          ...(r.listing.droppedXattrs.length > 0
            ? { dropped_xattrs: r.listing.droppedXattrs.slice(0, MAX_LISTED), dropped_xattrs_count: r.listing.droppedXattrs.length }
            : {}),
        };
        if (opts.json) return printJson(ctx.io, "cairn.cli.workload-assemble/1", result);
        ctx.io.out(
          [
            `assembled ${r.kind} workload`,
            `workload  ${r.identities.workload}`,
            `fs        ${r.identities.fs}`,
            `launch    ${r.identities.launch}`,
            `source    ${r.identities.source}`,
            `tree      ${r.entries} entries, ${r.files} files, ${r.treeBytes} bytes (raw closure ${r.rawBytes} bytes)`,
            `lock      ${r.lockPath}`,
            `took      ${r.durationMs} ms`,
            ...(r.memo === undefined
              ? []
              : [
                  r.memo.written
                    ? "memo      written: the first verify of this lock on this machine hashes its raw closure instead of re-deriving it (--full re-derives)"
                    : `memo      not written (${r.memo.why}): the first verify re-derives`,
                ]),
            ...listing(r.listing),
          ].join("\n"),
        );
      },
    );
}
