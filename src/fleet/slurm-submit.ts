/**
 * One `sbatch` of a campaign's tasks as a job array (issue 34). The array
 * script is a fixed bash script: array task `i` execs the argv in
 * `argv/<i>` beside it (NUL-separated, written by this file), so no task's
 * argument is ever parsed by a shell, and the script stays a few lines
 * whatever the campaign's size (sbatch refuses scripts over 4 MiB by
 * default). Each submission has its own directory under
 * `DIR/executor/slurm/`, with the output of array task `i` (all its
 * attempts: `--open-mode=append`) in `<i>.out`.
 *
 * The directory must be on a filesystem every node sees, as the campaign
 * directory itself must be: a task publishes its result there.
 */
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { CairnError, ensureDirsIn, ioError, writeFileAtomic } from "../core/index.ts";
import type { TaskResources } from "./executor.ts";
import { oneLine, slurm } from "./slurm-commands.ts";

/** One task of a submission: its array index is its position in the submission. */
export interface SubmittedTask {
  readonly id: string;
  readonly argv: readonly string[];
}

export interface Submission {
  /** The array's job id (`squeue`'s ArrayJobID). */
  readonly jobId: string;
  readonly dir: string;
  readonly tasks: readonly SubmittedTask[];
}

export interface SubmitRequest {
  readonly campaignDir: string;
  readonly tasks: readonly SubmittedTask[];
  readonly resources: TaskResources;
  /** At most this many array tasks running at once (`--array=…%N`). */
  readonly throttle?: number;
  readonly env: NodeJS.ProcessEnv;
  readonly commandMs: number;
}

const NUL = Buffer.of(0);

/** Quotes `s` for bash as one word. */
function shellWord(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

function arrayScript(dir: string): string {
  return [
    "#!/bin/bash",
    "# cairn campaign (issue 34): Slurm array task i runs the cairn task whose argv is in argv/<i> (NUL-separated).",
    "set -u",
    `argv_file=${shellWord(join(dir, "argv"))}/"$SLURM_ARRAY_TASK_ID"`,
    `mapfile -d '' -t argv <"$argv_file" || { echo "cairn: cannot read $argv_file" >&2; exit 2; }`,
    `[ "\${#argv[@]}" -gt 0 ] || { echo "cairn: empty argv in $argv_file" >&2; exit 2; }`,
    'exec "${argv[@]}"',
    "",
  ].join("\n");
}

/**
 * `dir` as the literal part of sbatch's --output pattern: a "%" in it is
 * written "%%", or Slurm would read "%a", "%j"… in a directory's name as its
 * own symbols and send the tasks' output elsewhere; a backslash would turn
 * every symbol off (all tasks into one literal "%a.out"), so it is refused.
 */
function slurmFilenamePattern(dir: string): string {
  if (dir.includes("\\"))
    throw new CairnError("PATH_UNSAFE", `${dir}: Slurm cannot name per-task output files below a path holding a backslash`, {
      path: dir,
      hint: "give the campaign a results directory (--out) whose path holds no backslash",
    });
  return dir.replace(/%/g, "%%");
}

/** The tasks' ids for a message: the first few and how many in all. */
export function namedTasks(tasks: readonly { readonly id: string }[]): string {
  const shown = tasks.slice(0, 3).map((t) => t.id);
  return tasks.length <= 3 ? `task ${shown.join(", ")}` : `${tasks.length} tasks (${shown.join(", ")}, …)`;
}

/** Writes the submission's files and submits its array; SLURM_REFUSED in sbatch's words when Slurm refuses it. */
export async function submitArray(req: SubmitRequest): Promise<Submission> {
  for (const t of req.tasks) {
    if (t.argv.length === 0 || t.argv.some((a) => a.includes("\0")))
      throw new CairnError("USAGE", `task ${t.id}: its command is empty or an argument holds a NUL byte`, { path: t.id });
  }
  slurmFilenamePattern(req.campaignDir); // a path Slurm cannot name output files below is refused before anything is written
  // executor/ and executor/slurm/ are reached without following a symlink (ROOT_UNSAFE otherwise)
  ensureDirsIn(req.campaignDir, ["executor", "executor/slurm"]);
  const parent = join(req.campaignDir, "executor", "slurm");
  let dir: string;
  try {
    // a fresh directory per submission (mkdtemp: created here, never an existing one or a symlink)
    dir = mkdtempSync(join(parent, "array-"));
  } catch (e) {
    throw ioError(parent, e, "create");
  }
  ensureDirsIn(dir, ["argv"]);
  req.tasks.forEach((t, i) => {
    // each argument ends with a NUL byte, as bash's `mapfile -d ''` reads them back
    writeFileAtomic(join(dir, "argv", String(i)), Buffer.concat(t.argv.flatMap((a) => [Buffer.from(a, "utf8"), NUL])), { mode: 0o600, durable: false });
  });
  writeFileAtomic(join(dir, "tasks.txt"), req.tasks.map((t, i) => `${i}\t${t.id}\n`).join(""), { mode: 0o600, durable: false });
  const script = join(dir, "array.sh");
  writeFileAtomic(script, arrayScript(dir), { mode: 0o700 });
  const r = req.resources;
  const throttle = req.throttle !== undefined && req.throttle > 0 ? `%${req.throttle}` : "";
  const args = [
    "--parsable",
    `--array=0-${req.tasks.length - 1}${throttle}`,
    "--job-name=cairn-campaign",
    `--cpus-per-task=${r.cpus}`,
    `--mem=${r.memoryMiB}M`,
    `--time=${r.timeMinutes}`,
    "--requeue",
    "--open-mode=append",
    `--output=${slurmFilenamePattern(dir)}/%a.out`,
    `--chdir=${req.campaignDir}`,
    script,
  ];
  const res = await slurm("sbatch", args, req.env, req.commandMs);
  if (!res.ok) {
    throw new CairnError("SLURM_REFUSED", `Slurm refused the job array of ${namedTasks(req.tasks)}: ${res.words}`, {
      path: script,
      hint: "these are sbatch's words; compare the campaign's resources (cpus, memory, time) with what the partition offers (sinfo -N -l)",
    });
  }
  const jobId = res.stdout.trim().split(";")[0] ?? "";
  if (!/^[0-9]+$/.test(jobId)) {
    throw new CairnError(
      "SLURM_REFUSED",
      `sbatch --parsable answered ${JSON.stringify(oneLine(res.stdout, 200))}, not a job id, for ${namedTasks(req.tasks)}`,
      {
        path: script,
      },
    );
  }
  return { jobId, dir, tasks: req.tasks };
}
