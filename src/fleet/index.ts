// Campaigns (issue 34): executors that start a campaign's tasks.
export type { Executor, ExecutorEvent, ExecutorPlan, TaskEnd, TaskLaunch, TaskResources } from "./executor.ts";
export { slurmExecutor } from "./slurm-executor.ts";
export type { SlurmExecutorOptions } from "./slurm-executor.ts";
export { SLURM_LIMITS, slurmLimits } from "./slurm-commands.ts";
export type { SlurmLimits } from "./slurm-commands.ts";
