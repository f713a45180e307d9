/**
 * Executors by name, for `campaign run --executor NAME`: `local` and
 * `slurm` (src/fleet/slurm-executor.ts: Slurm's commands found on PATH,
 * the cluster named by SLURM_CONF or /etc/slurm, limits from
 * CAIRN_SLURM_*). A name with no executor is EXECUTOR_UNAVAILABLE naming the
 * ones there are, never a silent fallback to another executor.
 */
import { CairnError } from "../core/index.ts";
import type { Executor } from "./executor.ts";
import { localExecutor } from "./local-executor.ts";
import { slurmExecutor } from "./slurm-executor.ts";

export type ExecutorName = Executor["name"];

/** Each executor's loader; `env` is the command's environment (the Slurm executor's SLURM_CONF, SBATCH_*, CAIRN_SLURM_*). */
const EXECUTORS = new Map<string, (env: NodeJS.ProcessEnv) => Promise<Executor>>([
  ["local", async () => localExecutor],
  ["slurm", async (env) => slurmExecutor({ env })],
]);

/** Makes an executor available by its name (the Slurm executor's module calls this). */
export function registerExecutor(name: ExecutorName, load: (env: NodeJS.ProcessEnv) => Promise<Executor>): void {
  EXECUTORS.set(name, load);
}

export async function executorByName(name: string, env: NodeJS.ProcessEnv = process.env): Promise<Executor> {
  const load = EXECUTORS.get(name);
  if (load === undefined) {
    const known = ["local", "slurm"].includes(name);
    throw new CairnError(
      "EXECUTOR_UNAVAILABLE",
      known ? `the ${name} executor is not built into this cairn yet` : `no executor named ${JSON.stringify(name)}`,
      {
        path: "--executor",
        hint: `executors built in: ${[...EXECUTORS.keys()].join(", ")}`,
      },
    );
  }
  return load(env);
}
