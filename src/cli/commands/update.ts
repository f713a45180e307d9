import { existsSync } from "node:fs";
import { resolve as resolvePath } from "node:path";
import type { Command } from "commander";
import { CairnError, readSigningKey } from "../../core/index.ts";
import {
  environmentId,
  isFrozen,
  planUpdate,
  readLockfileUnvalidated,
  requireLayerBlobs,
  signaturePath,
  writeLockfile,
  type LockChange,
  type UpdatePlan,
} from "../../strata/index.ts";
import type { Context } from "../context.ts";
import { DIFF_DIFFERENT, DIFF_EQUAL, DIFF_EXIT_HELP, DIFF_TROUBLE, diffExitCodes } from "../diff-exit.ts";
import { printable, printJson } from "../output.ts";
import { resolveWithFlags, withResolveFlags, type ResolveFlags } from "../resolve-flags.ts";

interface UpdateOpts extends ResolveFlags {
  lock: string;
  write?: boolean;
  sign?: string;
  unsigned?: boolean;
  json?: boolean;
}

const MARK = { added: "+", removed: "-", changed: "~" } as const;
const changeLine = (c: LockChange): string => `  ${MARK[c.change]} ${c.path}${c.change === "changed" ? `: ${c.a} → ${c.b}` : `: ${c.a ?? c.b}`}`;

/** The plan as a person reviews it: layers first (as `uv lock --upgrade --dry-run` lists packages), then the base, the package sets, the rest. */
function planLines(plan: UpdatePlan): string[] {
  const { layers } = plan;
  const lines: string[] = [];
  const layerLines = [
    ...layers.upgraded.map((l) => `  ~ ${l.name} ${l.from} → ${l.to} (upgrade)`),
    ...layers.downgraded.map((l) => `  ~ ${l.name} ${l.from} → ${l.to} (downgrade)`),
    ...layers.rebuilt.map((l) => `  ~ ${l.name} rebuilt: ${l.from} → ${l.to}`),
    ...layers.added.map((l) => `  + ${l.name} ${l.version}`),
    ...layers.removed.map((l) => `  - ${l.name} ${l.version}`),
  ];
  if (layerLines.length > 0) lines.push("layers", ...layerLines);
  if (plan.base.length > 0) lines.push("base", ...plan.base.map(changeLine));
  if (plan.packages.length > 0) lines.push("packages", ...plan.packages.map(changeLine));
  if (plan.other.length > 0) lines.push("other", ...plan.other.map(changeLine));
  return lines;
}

/**
 * `cairn update PROFILE --lock LOCK [resolve's flags] [--write [--sign KEY | --unsigned]]`:
 * re-resolve and show what would change in LOCK; write it only with --write.
 */
export function registerUpdate(program: Command, ctx: Context): void {
  withResolveFlags(program.command("update"))
    .description(
      `re-resolve a profile and show what would change in its lockfile (layers added, removed, upgraded; base; packages); writes only with --write (${DIFF_EXIT_HELP.replace("equal", "nothing changes").replace("different", "changes")})`,
    )
    .argument("<profile>", "profile YAML file")
    .requiredOption("--lock <lock>", "the existing lockfile to compare with (and, with --write, to replace)")
    .option("--write", "replace LOCK with the new resolution when anything changes (atomically)")
    .option("--sign <key>", "sign the new lockfile with this Ed25519 private key (needed with --write when LOCK is signed)")
    .option("--unsigned", "with --write, replace a signed LOCK by an unsigned lockfile knowingly")
    .option("--json", "print the result as JSON")
    .action(async (path: string, opts: UpdateOpts) => {
      diffExitCodes(ctx);
      if (opts.sign !== undefined && opts.unsigned === true) throw new CairnError("USAGE", "give --sign KEY or --unsigned, not both", { path: "--unsigned" });
      const lockPath = resolvePath(ctx.cwd, opts.lock);
      // Parsed without Validate (as lock diff reads), so a lockfile that breaks a rule is shown with its problems.
      const current = readLockfileUnvalidated(lockPath);
      const wasSigned = existsSync(signaturePath(lockPath));
      const { lock, registries } = await resolveWithFlags(ctx, path, opts);
      const plan = planUpdate(current.lock, lock, current.problems);
      const trouble = plan.diff.problems_a.length > 0;
      const write = opts.write === true && plan.changed && !trouble;
      if (write && wasSigned && opts.sign === undefined && opts.unsigned !== true) {
        throw new CairnError("USAGE", `${opts.lock} is signed: --write without --sign would replace it with an unsigned lockfile`, {
          path: "--sign",
          hint: "pass --sign KEY to sign the new lockfile, or --unsigned to drop the signature knowingly",
        });
      }
      const key = write && opts.sign !== undefined ? readSigningKey(opts.sign) : undefined;
      // a signature attests that every chosen layer can be fetched as pinned (as resolve checks before signing)
      if (key !== undefined)
        await requireLayerBlobs(
          lock,
          registries.map((r) => r.registry),
        );
      const written = write ? writeLockfile(lockPath, lock, key) : undefined;
      ctx.exitCode = trouble ? DIFF_TROUBLE : plan.changed ? DIFF_DIFFERENT : DIFF_EQUAL;
      const newId = isFrozen(lock) ? environmentId(lock) : null;
      if (opts.json) {
        printJson(ctx.io, "cairn.cli.update/1", {
          lockfile: lockPath,
          changed: plan.changed,
          written: written !== undefined,
          signature: written?.signature ?? null,
          environment_id: { current: plan.diff.id_a, new: newId },
          layers: plan.layers,
          base: plan.base,
          packages: plan.packages,
          other: plan.other,
          unlisted: plan.unlisted,
          problems: plan.diff.problems_a,
        });
        return;
      }
      const lines = plan.diff.problems_a.map((p) => `! ${opts.lock} ${p.path}: [${p.code}] ${p.message}`);
      if (!plan.changed) lines.push(`${opts.lock} is up to date: re-resolving changes nothing lock diff compares (resolved_at aside)`);
      else lines.push(...planLines(plan));
      if (plan.unlisted.length > 0) lines.push(`also differ, not compared by lock diff (not counted as changes): ${plan.unlisted.join(", ")}`);
      if (plan.diff.id_a !== newId) lines.push(`environment ${plan.diff.id_a ?? "(none)"} → ${newId ?? "(unfrozen)"}`);
      if (trouble) lines.push(`not written: ${opts.lock} breaks a rule; resolve anew with \`cairn resolve ... --out\``);
      else if (written !== undefined) {
        lines.push(
          `wrote ${lockPath}${written.signature ? ` and ${signaturePath(lockPath)} (signed by ${written.signature.keyid})` : wasSigned ? " (unsigned, as --unsigned asked; its old signature is removed)" : " (unsigned)"}`,
        );
      } else if (plan.changed) lines.push("not written: pass --write to replace the lockfile");
      // package names and problem messages come from the lockfiles: one printed line each, escaped
      ctx.io.out(lines.map(printable).join("\n"));
    });
}
