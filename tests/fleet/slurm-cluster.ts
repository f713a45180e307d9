/**
 * A throwaway single-host Slurm cluster for the tests (issue 34), its
 * daemons children of the test: munged, `slurmctld -D` and
 * `slurmd -D -N localhost` on free loopback ports, every file under one
 * directory that scripts/slurm-cluster.sh configures (the one definition of
 * the cluster's slurm.conf). Nothing under /etc is touched: the daemons and
 * the client commands find the cluster through SLURM_CONF (the `env` this
 * returns), munged through --socket and --key-file.
 *
 * The directory is made under /tmp, not the test run's TMPDIR: munged
 * refuses a socket below a directory others cannot traverse, and the run's
 * TMPDIR is 0700. `stop()` drains the queue (cancelling what is left),
 * `scontrol shutdown`s, waits for the daemons to exit, stops munged and
 * removes the directory; the process's exit kills any daemon still alive.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const SCRIPT = fileURLToPath(new URL("../../scripts/slurm-cluster.sh", import.meta.url));

/** The bound on the cluster coming up or going down: a hang guard, not a measure (measured: up in 1-2 s). */
export const CLUSTER_GUARD_MS = 120_000;

/** What is missing to start a cluster here, for `needs()`; undefined when nothing is. */
export function slurmMissing(): string | undefined {
  for (const cmd of ["munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo"]) {
    const r = spawnSync("sh", ["-c", `command -v ${cmd}`], { stdio: "ignore" });
    if (r.status !== 0) return `${cmd} (scripts/setup-host.sh installs slurmctld, slurmd, slurm-client and munge)`;
  }
  return undefined;
}

export interface SlurmCluster {
  readonly dir: string;
  /** process.env plus SLURM_CONF: the environment of every Slurm command against this cluster. */
  readonly env: NodeJS.ProcessEnv;
  /** Runs a Slurm client command against this cluster; returns stdout (throws on a non-zero exit). */
  cmd(command: string, args: readonly string[]): string;
  /** Resolves when `check()` holds, looking every 100 ms: for waiting on a job or node state (an event), bounded by the guard. */
  until(what: string, check: () => boolean): Promise<void>;
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const a = s.address();
      s.close(() => (typeof a === "object" && a !== null ? resolve(a.port) : reject(new Error("no port"))));
    });
  });
}

/**
 * SIGKILLs every process of this cluster still alive after its shutdown: a
 * slurmstepd (and its task) outlives slurmd by design, and one was seen
 * still running a task slurmctld listed as CANCELLED. They are found by
 * identity, the SLURM_CONF of this cluster in their environment, never by
 * name.
 */
function killLeftovers(conf: string): void {
  const mark = Buffer.from(`SLURM_CONF=${conf}\0`);
  for (const pid of readdirSync("/proc").filter((n) => /^[0-9]+$/.test(n))) {
    if (Number(pid) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${pid}/environ`).includes(mark)) process.kill(Number(pid), "SIGKILL");
    } catch {
      // gone, or not ours to read
    }
  }
}

function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once("exit", () => resolve());
  });
}

export async function startSlurmCluster(): Promise<SlurmCluster> {
  const dir = mkdtempSync("/tmp/cairn-slurm-test-");
  const [ctld, slurmd] = [await freePort(), await freePort()];
  execFileSync("bash", [SCRIPT, "config", dir, String(ctld), String(slurmd)], { stdio: ["ignore", "ignore", "inherit"] });
  const env: NodeJS.ProcessEnv = { ...process.env, SLURM_CONF: join(dir, "slurm.conf") };
  const children: ChildProcess[] = [];
  const killAll = (): void => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  };
  process.once("exit", killAll);
  const daemon = (cmd: string, args: string[]): ChildProcess => {
    const c = spawn(cmd, args, { env, stdio: "ignore" });
    c.on("error", () => {});
    children.push(c);
    return c;
  };
  const munged = daemon("munged", [
    "-F",
    `--socket=${dir}/munge/munge.socket`,
    `--key-file=${dir}/munge/munge.key`,
    `--pid-file=${dir}/munge/munged.pid`,
    `--seed-file=${dir}/munge/munged.seed`,
    `--log-file=${dir}/log/munged.log`,
  ]);
  const cmd = (command: string, args: readonly string[]): string =>
    execFileSync(command, [...args], { env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  const ok = (command: string, args: readonly string[]): string | undefined => {
    const r = spawnSync(command, [...args], { env, encoding: "utf8" });
    return r.status === 0 ? r.stdout : undefined;
  };
  const until = async (what: string, check: () => boolean): Promise<void> => {
    const deadline = Date.now() + CLUSTER_GUARD_MS;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`slurm cluster in ${dir}: gave up waiting for ${what} (hang guard)`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  await until("munged's socket", () => ok("munge", ["-S", `${dir}/munge/munge.socket`, "-n"]) !== undefined);
  const ctldProc = daemon("slurmctld", ["-D"]);
  const slurmdProc = daemon("slurmd", ["-D", "-N", "localhost"]);
  await until("the node to be idle", () => ok("sinfo", ["-h", "-n", "localhost", "-o", "%T"])?.trim() === "idle");
  const stop = async (): Promise<void> => {
    ok("scancel", ["--user", String(process.getuid?.() ?? 0)]);
    await until("the queue to drain", () => (ok("squeue", ["-h", "-o", "%i"]) ?? "").trim() === "");
    ok("scontrol", ["shutdown"]);
    await Promise.all([exited(ctldProc), exited(slurmdProc)]);
    munged.kill("SIGTERM");
    await exited(munged);
    process.removeListener("exit", killAll);
    killLeftovers(env.SLURM_CONF!);
    rmSync(dir, { recursive: true, force: true });
  };
  return { dir, env, cmd, until, stop };
}
