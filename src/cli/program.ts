/**
 * The cairn program: every command registered on one commander program, in
 * help order. Each command lives in its own file under `commands/` (a noun
 * with verbs, such as `lock`, registers its verb files); this file only lists
 * them, and loads only the one a command line names. Add one line per
 * top-level command file.
 */
import { Command } from "commander";
import type { Context } from "./context.ts";
import { CAIRN_VERSION } from "./cairn-version.ts";

type Register = (program: Command, ctx: Context) => void;

/**
 * Every top-level command, in help order: its name and its file, imported
 * only when that command runs (or for help), so a command does not pay for
 * loading every other command's library. Add one line per command file.
 */
export const COMMANDS: ReadonlyArray<{ readonly name: string; readonly load: () => Promise<Register>; readonly wholeTree?: true }> = [
  { name: "keygen", load: async () => (await import("./commands/keygen.ts")).registerKeygen },
  { name: "manifest", load: async () => (await import("./commands/manifest.ts")).registerManifest },
  { name: "workload", load: async () => (await import("./commands/workload.ts")).registerWorkload },
  { name: "pull", load: async () => (await import("./commands/pull.ts")).registerPull },
  { name: "store", load: async () => (await import("./commands/content-store.ts")).registerStore },
  { name: "profile", load: async () => (await import("./commands/profile.ts")).registerProfile },
  { name: "resolve", load: async () => (await import("./commands/resolve.ts")).registerResolve },
  { name: "update", load: async () => (await import("./commands/update.ts")).registerUpdate },
  { name: "freeze", load: async () => (await import("./commands/freeze.ts")).registerFreeze },
  { name: "lock", load: async () => (await import("./commands/lock.ts")).registerLock },
  { name: "layer", load: async () => (await import("./commands/layer.ts")).registerLayer },
  { name: "formation", load: async () => (await import("./commands/formation.ts")).registerFormation },
  { name: "registry", load: async () => (await import("./commands/registry-admin.ts")).registerRegistry },
  { name: "search", load: async () => (await import("./commands/search.ts")).registerSearch },
  { name: "setup", load: async () => (await import("./commands/setup.ts")).registerSetup },
  { name: "run", load: async () => (await import("./commands/run.ts")).registerRun },
  { name: "branch", load: async () => (await import("./commands/branch-run.ts")).registerBranch },
  { name: "replay", load: async () => (await import("./commands/replay.ts")).registerReplay },
  { name: "explore", load: async () => (await import("./commands/explore.ts")).registerExplore },
  { name: "receipt", load: async () => (await import("./commands/receipt.ts")).registerReceipt },
  { name: "bundle", load: async () => (await import("./commands/replay-bundle.ts")).registerBundle },
  { name: "campaign", load: async () => (await import("./commands/campaign.ts")).registerCampaign },
  { name: "runs", load: async () => (await import("./commands/runs.ts")).registerRuns },
  // reads the whole command tree: every command is loaded when it runs
  { name: "completion", load: async () => (await import("./commands/completion.ts")).registerCompletion, wholeTree: true },
];

/** The top-level command `argv` names (its first word that is not an option), if it is one of COMMANDS and needs only itself. */
function commandNamed(argv: readonly string[] | undefined): string | undefined {
  const first = argv?.find((a) => !a.startsWith("-"));
  return COMMANDS.some((c) => c.name === first && c.wholeTree !== true) ? first : undefined;
}

/**
 * The program. With `argv`, only the command it names is loaded and
 * registered (anything else, such as `--help`, an unknown word or a command
 * that reads the whole tree like `completion`, loads them all, so help and
 * commander's suggestions see every command).
 */
export async function buildProgram(ctx: Context, argv?: readonly string[]): Promise<Command> {
  const program = new Command("cairn")
    .description("Make a compute environment a checkable fact: canonical identities, signed locks, offline verification, deterministic record/replay.")
    .version(CAIRN_VERSION)
    .showHelpAfterError(false)
    .exitOverride()
    .configureOutput({
      writeOut: (s) => ctx.io.out(s),
      writeErr: (s) => ctx.io.err(s),
    });
  // Root options go before the noun (`cairn --version`): `layer build --version V` and
  // `formation build --version V` are the commands' own flags wherever they appear.
  program.enablePositionalOptions();
  const named = commandNamed(argv);
  for (const c of COMMANDS) if (named === undefined || c.name === named) (await c.load())(program, ctx);
  program.option(QUIET_FLAG, QUIET_HELP);
  addQuiet(program.commands);
  return program;
}

const QUIET_FLAG = "--quiet";
const QUIET_HELP = "no progress on stderr (a bar is drawn only when stderr is a terminal)";

/**
 * `--quiet` on every command that runs, one definition for all: main.ts reads
 * it from the command line before the program parses (as it reads --json),
 * and the progress display (progress-bar.ts) then draws nothing.
 */
function addQuiet(commands: readonly Command[]): void {
  for (const c of commands) {
    if (c.commands.length > 0) addQuiet(c.commands);
    else if (!c.options.some((o) => o.long === QUIET_FLAG)) c.option(QUIET_FLAG, QUIET_HELP);
  }
}
