/**
 * The cairn program: every command registered on one commander program, in
 * help order. Each command lives in its own file under `commands/` (a noun
 * with verbs, such as `lock`, registers its verb files); this file only lists
 * them. Add one line per top-level command file.
 */
import { Command } from "commander";
import type { Context } from "./context.ts";
import { CAIRN_VERSION } from "./cairn-version.ts";
import { registerKeygen } from "./commands/keygen.ts";
import { registerManifest } from "./commands/manifest.ts";
import { registerWorkload } from "./commands/workload.ts";
import { registerSetup } from "./commands/setup.ts";
import { registerRun } from "./commands/run.ts";
import { registerReplay } from "./commands/replay.ts";
import { registerReceipt } from "./commands/receipt.ts";
import { registerBundle } from "./commands/replay-bundle.ts";
import { registerRuns } from "./commands/runs.ts";
import { registerProfile } from "./commands/profile.ts";
import { registerResolve } from "./commands/resolve.ts";
import { registerLock } from "./commands/lock.ts";
import { registerFreeze } from "./commands/freeze.ts";
import { registerLayer } from "./commands/layer.ts";
import { registerFormation } from "./commands/formation.ts";
import { registerSearch } from "./commands/search.ts";
import { registerStore } from "./commands/content-store.ts";
import { registerPull } from "./commands/pull.ts";

/** Every command, in help order. Add one line per command file. */
export const COMMANDS: ReadonlyArray<(program: Command, ctx: Context) => void> = [
  registerKeygen,
  registerManifest,
  registerWorkload,
  registerPull,
  registerStore,
  registerProfile,
  registerResolve,
  registerFreeze,
  registerLock,
  registerLayer,
  registerFormation,
  registerSearch,
  registerSetup,
  registerRun,
  registerReplay,
  registerReceipt,
  registerBundle,
  registerRuns,
];

export function buildProgram(ctx: Context): Command {
  const program = new Command("cairn")
    .description("Make a compute environment a checkable fact: canonical identities, signed locks, offline verification, deterministic record/replay.")
    .version(CAIRN_VERSION)
    .showHelpAfterError(false)
    .exitOverride()
    .configureOutput({
      writeOut: (s) => ctx.io.out(s),
      writeErr: (s) => ctx.io.err(s),
    });
  for (const register of COMMANDS) register(program, ctx);
  return program;
}
