/**
 * Slurm's own commands, run and read (issue 34): `sbatch`, `squeue`,
 * `scontrol`, `sinfo`, `scancel`, nothing home-made in between. This file
 * only runs a command with a bound and turns its text into records; what
 * the records mean for a campaign's tasks is slurm-executor.ts.
 *
 * Slurm's text is an input like any other: each command's output is
 * bounded (SLURM_OUTPUT_MAX), each run has a time bound (`slurm.command-ms`),
 * and a line that does not parse is skipped, never guessed at. A missing
 * command is PREREQUISITE_MISSING naming the Debian package.
 */
import { execFile } from "node:child_process";
import { CairnError } from "../core/index.ts";

/** The Slurm executor's named limits (overridable per run; `CAIRN_SLURM_<NAME>` in the CLI). */
export interface SlurmLimits {
  /** `slurm.poll-ms`: how often the array is looked at with squeue (a cheap RPC; never a busy loop). */
  readonly pollMs: number;
  /**
   * `slurm.stuck-ms`: how long tasks may wait while Slurm says they cannot start (every node of
   * their partition down or drained, or a pending reason only a configuration change clears)
   * before they are cancelled and reported in Slurm's words.
   */
  readonly stuckMs: number;
  /** `slurm.unreachable-ms`: how long squeue may keep failing (controller down) before the run gives up. */
  readonly unreachableMs: number;
  /** `slurm.command-ms`: the bound on one Slurm command. */
  readonly commandMs: number;
}

export const SLURM_LIMITS: { readonly [K in keyof SlurmLimits]: { readonly name: string; readonly default: number } } = {
  pollMs: { name: "slurm.poll-ms", default: 250 },
  stuckMs: { name: "slurm.stuck-ms", default: 300_000 },
  unreachableMs: { name: "slurm.unreachable-ms", default: 120_000 },
  commandMs: { name: "slurm.command-ms", default: 60_000 },
};

/** `slurm.poll-ms` is set by CAIRN_SLURM_POLL_MS in the environment, and so on. */
export function slurmLimitVariable(k: keyof SlurmLimits): string {
  return `CAIRN_${SLURM_LIMITS[k].name.replace(/[.-]/g, "_").toUpperCase()}`;
}

/** The limits: each given one, else its CAIRN_SLURM_* variable in `env`, else its default. */
export function slurmLimits(given: Partial<SlurmLimits> = {}, env: NodeJS.ProcessEnv = {}): SlurmLimits {
  const d = (k: keyof SlurmLimits): number => {
    const fromEnv = env[slurmLimitVariable(k)];
    if (fromEnv !== undefined && !/^[0-9]{1,12}$/.test(fromEnv))
      throw new CairnError("USAGE", `${slurmLimitVariable(k)} must be a whole number of milliseconds`, { path: slurmLimitVariable(k) });
    const v = given[k] ?? (fromEnv !== undefined ? Number(fromEnv) : SLURM_LIMITS[k].default);
    if (!Number.isSafeInteger(v) || v < 0) throw new CairnError("USAGE", `${SLURM_LIMITS[k].name} must be a whole number of milliseconds, not ${String(v)}`);
    return v;
  };
  return { pollMs: d("pollMs"), stuckMs: d("stuckMs"), unreachableMs: d("unreachableMs"), commandMs: d("commandMs") };
}

/** The most bytes of one Slurm command's output read (squeue of a 10,000-task array is about 600 KiB). */
export const SLURM_OUTPUT_MAX = 64 * 1024 * 1024;

export type SlurmResult = { readonly ok: true; readonly stdout: string } | { readonly ok: false; readonly words: string };

const INSTALL_HINT = "install Slurm's client commands (apt-get install slurm-client), or start the throwaway cluster: bash scripts/slurm-cluster.sh start";

/** Runs one Slurm command; a non-zero exit is `{ ok: false, words }` with Slurm's own message (stderr, else stdout). */
export function slurm(command: string, args: readonly string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<SlurmResult> {
  return new Promise((resolve, reject) => {
    execFile(command, [...args], { env, timeout: timeoutMs, maxBuffer: SLURM_OUTPUT_MAX, encoding: "utf8" }, (error, stdout, stderr) => {
      if (error === null) {
        resolve({ ok: true, stdout });
        return;
      }
      const e = error as NodeJS.ErrnoException & { killed?: boolean; signal?: string | null };
      if (e.code === "ENOENT") {
        reject(
          new CairnError("PREREQUISITE_MISSING", `Slurm's ${command} is not installed (the Slurm executor runs Slurm's own commands)`, { hint: INSTALL_HINT }),
        );
        return;
      }
      if (e.killed === true && e.signal === "SIGTERM") {
        resolve({ ok: false, words: `${command} did not answer within ${SLURM_LIMITS.commandMs.name}=${timeoutMs}` });
        return;
      }
      const said = oneLine(stderr.trim() !== "" ? stderr : stdout);
      resolve({ ok: false, words: said !== "" ? said : `${command} failed (${e.message})` });
    });
  });
}

/** Slurm's words on one line (its errors span lines), bounded for a message. */
export function oneLine(text: string, max = 600): string {
  const s = text
    .replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, "")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "")
    .join("; ");
  return s.length > max ? `${s.slice(0, max)}…` : s;
}

/** One array task as squeue lists it. */
export interface QueueRow {
  readonly jobId: string;
  readonly index: number;
  readonly state: string;
  readonly restarts: number;
  readonly partition: string;
  readonly nodes: string;
  readonly reason: string;
}

/** squeue's fields, '|'-separated, one array task per line (`-r`), every state (`-t all`) while Slurm keeps the record. */
export const SQUEUE_FORMAT = "ArrayJobID:|,ArrayTaskID:|,State:|,RestartCnt:|,Partition:|,NodeList:|,Reason:|";

export function parseQueue(text: string): QueueRow[] {
  const rows: QueueRow[] = [];
  for (const line of text.split("\n")) {
    const f = line.split("|");
    if (f.length < 7) continue;
    const [jobId, index, state, restarts, partition, nodes] = f as [string, string, string, string, string, string];
    const reason = f.slice(6).join("|").replace(/\|$/, "");
    if (!/^[0-9]+$/.test(jobId.trim()) || !/^[0-9]+$/.test(index.trim()) || !/^[0-9]+$/.test(restarts.trim())) continue;
    rows.push({
      jobId: jobId.trim(),
      index: Number(index.trim()),
      state: state.trim(),
      restarts: Number(restarts.trim()),
      partition: partition.trim(),
      nodes: nodes.trim(),
      reason: reason.trim(),
    });
  }
  return rows;
}

/** `scontrol show job -o` records: one per line, `Key=Value` pairs (a value may hold spaces: it runs to the next ` Key=`). */
export function parseScontrolRecords(text: string): Map<string, string>[] {
  const out: Map<string, string>[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const rec = new Map<string, string>();
    let key: string | undefined;
    for (const token of line.trim().split(" ")) {
      const m = /^([A-Za-z][A-Za-z0-9_:/]*)=(.*)$/.exec(token);
      if (m !== null) {
        key = m[1]!;
        rec.set(key, m[2]!);
      } else if (key !== undefined) {
        rec.set(key, `${rec.get(key)} ${token}`);
      }
    }
    out.push(rec);
  }
  return out;
}

/** One node of a partition as sinfo lists it: its state and the administrator's reason. */
export interface NodeRow {
  readonly node: string;
  readonly state: string;
  readonly reason: string;
}

export const SINFO_FORMAT = "%N|%T|%E";

export function parseNodes(text: string): NodeRow[] {
  const rows: NodeRow[] = [];
  for (const line of text.split("\n")) {
    const f = line.split("|");
    if (f.length < 3 || f[0]!.trim() === "") continue;
    rows.push({ node: f[0]!.trim(), state: f[1]!.trim(), reason: f.slice(2).join("|").trim() });
  }
  return rows;
}

/** Node states in which a node can start a job (sinfo's long names, flags such as `*` or `~` stripped). */
const USABLE_NODE_STATES = new Set(["idle", "mixed", "allocated", "completing", "planned", "reserved"]);

export function nodeUsable(row: NodeRow): boolean {
  return USABLE_NODE_STATES.has(row.state.replace(/[*~#!%$@^-]+$/, "").toLowerCase());
}

/** Job states after which a job runs no more (a requeued job goes back to PENDING instead). */
export const ENDED_STATES = new Set([
  "COMPLETED",
  "FAILED",
  "CANCELLED",
  "TIMEOUT",
  "NODE_FAIL",
  "OUT_OF_MEMORY",
  "PREEMPTED",
  "BOOT_FAIL",
  "DEADLINE",
  "SPECIAL_EXIT",
  "REVOKED",
]);

/**
 * Pending reasons that no amount of waiting clears, only a change of Slurm's
 * configuration or of the request (squeue(1), "JOB REASON CODES").
 */
export const NEVER_STARTS_REASONS = new Set([
  "PartitionConfig",
  "PartitionNodeLimit",
  "PartitionTimeLimit",
  "PartitionDown",
  "PartitionInactive",
  "BadConstraints",
  "InvalidAccount",
  "InvalidQOS",
]);
