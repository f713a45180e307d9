/**
 * Executors by name, for `campaign run --executor NAME`. `local` is built
 * in; `slurm` (src/fleet/slurm-executor.ts) registers itself here when it
 * is built. A name with no executor is EXECUTOR_UNAVAILABLE naming the
 * ones there are, never a silent fallback to another executor.
 */
import { CairnError } from "../core/index.ts";
import type { Executor } from "./executor.ts";
import { localExecutor } from "./local-executor.ts";

export type ExecutorName = Executor["name"];

const EXECUTORS = new Map<string, () => Promise<Executor>>([["local", async () => localExecutor]]);

/** Makes an executor available by its name (the Slurm executor's module calls this). */
export function registerExecutor(name: ExecutorName, load: () => Promise<Executor>): void {
  EXECUTORS.set(name, load);
}

export async function executorByName(name: string): Promise<Executor> {
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
  return load();
}
