/**
 * What a campaign hands an executor (issue 34), and what it gets back.
 *
 * An executor only starts processes: each task is one command line
 * (`cairn campaign task DIR TASK`) that runs the task and publishes the
 * task's result into the campaign's results directory itself, atomically.
 * The executor reports how each launch ended (attempts, and when no result
 * appeared, why, in the scheduler's own words); it never writes or reads a
 * result. The campaign decides a task's verdict from what the task
 * published, so an executor cannot make a task pass.
 *
 * Executors: `local` (processes on this host, up to `jobs` at once) and
 * `slurm` (one job array through `sbatch`, followed with `squeue` and
 * `scontrol show job`; Slurm's own commands and nothing in between).
 */

/** Resources one task needs; the Slurm executor asks for them per array task. */
export interface TaskResources {
  /** CPUs per task (QEMU under TCG uses one per guest vCPU, plus one for cairn). */
  readonly cpus: number;
  /** Memory per task, MiB. */
  readonly memoryMiB: number;
  /** Wall-clock limit per task, minutes (Slurm `--time`). */
  readonly timeMinutes: number;
}

/** One task to start: its name (the campaign's task id) and the command that runs it. */
export interface TaskLaunch {
  readonly id: string;
  /** Absolute argv: the command publishes the task's result under the campaign directory before it exits 0. */
  readonly argv: readonly string[];
  /** Whether the task's result is published (the executor asks after each attempt; a launch that exited without one is retried). */
  readonly published: () => boolean;
}

export interface ExecutorPlan {
  /** The campaign's results directory (executors keep their own files under `DIR/executor/`). */
  readonly campaignDir: string;
  readonly tasks: readonly TaskLaunch[];
  readonly resources: TaskResources;
  /** How many more times a task whose attempt ended without a published result is started (a node died, the process was killed). */
  readonly retries: number;
  /** Local executor: tasks at once. */
  readonly jobs?: number;
  /**
   * The environment each task command runs with (local: the child's; Slurm:
   * sbatch's, which exports it to the job). Registry credentials reach a
   * task here, as the names of their files, never on its argv. Default: the
   * executor's own.
   */
  readonly env?: NodeJS.ProcessEnv;
  /** Progress, for `campaign run`'s output; never needed for correctness. */
  readonly onEvent?: (event: ExecutorEvent) => void;
}

export interface ExecutorEvent {
  readonly kind: "started" | "ended" | "retried";
  readonly task: string;
  /** For "ended" and "retried": how the attempt ended, in the executor's (or scheduler's) words. */
  readonly detail?: string;
}

/** How the launches of one task ended. */
export interface TaskEnd {
  readonly task: string;
  /** Attempts made (1 when the first published a result). */
  readonly attempts: number;
  /** Whether a result was published by the last attempt. */
  readonly published: boolean;
  /** When nothing was published: why, in the executor's or the scheduler's own words (e.g. Slurm's job state and reason). */
  readonly failure?: string;
}

export interface Executor {
  readonly name: "local" | "slurm";
  run(plan: ExecutorPlan): Promise<readonly TaskEnd[]>;
}
