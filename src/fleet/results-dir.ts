/**
 * The results directory of a campaign (`--out DIR`), a root cairn owns
 * (core/owned-root.ts: made with its marker `cairn-campaign.json`, or an
 * empty private directory adopted). Its layout, and nothing else:
 *
 *   cairn-campaign.json          the marker
 *   campaign.json                the plan (plan-file.ts), written atomically
 *   campaign-receipt.dsse.json   the signed campaign receipt (campaign-receipt.ts)
 *   campaign.lock                held by the one `campaign run` using DIR (campaign-lock.ts)
 *   tasks/<task>/                one published task: result.json, receipt.dsse.json
 *   tasks/.<task>.<host>.<pid>.<hex>.tmp  a task being written (removed when its writer on this host is gone)
 *   runs/                        the runs directory of a record campaign's runs
 *   failures/<task>.json         how a task's last launch ended when it published nothing
 *   executor/                    the executors' own files
 *
 * Attack stopped: a results directory planted with a symlink (tasks/<t> →
 * elsewhere, so a report reads, or a resume trusts, someone else's files)
 * or a foreign file is refused before anything is read or run: ROOT_UNSAFE
 * for a link or wrong type where cairn expects its own, ROOT_FOREIGN for a
 * name cairn never writes. A task directory is whole or absent: it appears
 * by one rename once its result and receipt are in it.
 */
import { lstatSync, mkdirSync, readdirSync, renameSync, rmSync, type Stats } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { CairnError, fileKind, fsyncDir, ioError, openRoot, removeIn, type RootKind } from "../core/index.ts";
import { onInterrupt, processAlive, RUNS_ROOT } from "../vm/index.ts";
import { TASK_NAME_RE } from "./task-identity.ts";

export const CAMPAIGN_ROOT: RootKind = {
  what: "campaign results directory",
  format: "cairn.campaign-results/1",
  marker: "cairn-campaign.json",
  mode: 0o700,
  hint: "pass --out with a new, empty or cairn-made campaign results directory",
};

export const RESULTS = {
  plan: "campaign.json",
  receipt: "campaign-receipt.dsse.json",
  lock: "campaign.lock",
  tasks: "tasks",
  runs: "runs",
  failures: "failures",
  executor: "executor",
  result: "result.json",
  taskReceipt: "receipt.dsse.json",
} as const;

const TOP_FILES: readonly string[] = [CAMPAIGN_ROOT.marker, RESULTS.plan, RESULTS.receipt, RESULTS.lock];
const TOP_DIRS: readonly string[] = [RESULTS.tasks, RESULTS.runs, RESULTS.failures, RESULTS.executor];
const TEMP = /^\.(.+)\.[1-9][0-9]*\.[0-9a-f]{12}\.tmp$/;

/**
 * A task's staging, `.<task>.<host>.<pid>.<12 hex>.tmp`: tasks may run on
 * other nodes of a cluster sharing DIR, where a pid says nothing about this
 * host's processes, so the writer's host is in the name. Only this host's
 * staging whose process is gone is removed; another host's is left alone
 * (never removed under a live writer) and not counted.
 */
const TASK_STAGING = /^\.([0-9a-f]{64})\.(?:([A-Za-z0-9-]{1,63})\.)?([1-9][0-9]*)\.[0-9a-f]{12}\.tmp$/;

/** This host's name as it appears in a staging name. */
export function stagingHost(): string {
  return (
    hostname()
      .replace(/[^A-Za-z0-9-]/g, "-")
      .slice(0, 63) || "host"
  );
}

/** A task staging name's task, host (this host for names without one) and pid; undefined for any other name. */
export function parseTaskStaging(name: string): { task: string; host: string; pid: number } | undefined {
  const m = TASK_STAGING.exec(name);
  return m === null ? undefined : { task: m[1]!, host: m[2] ?? stagingHost(), pid: Number(m[3]) };
}

function foreign(path: string, what: string): CairnError {
  return new CairnError("ROOT_FOREIGN", `${path}: ${what}; cairn never writes it, so it does not read, run or count anything in this results directory`, {
    path,
    hint: "remove what was put there, or give --out a new directory",
  });
}

function unsafe(path: string, st: Stats, want: string): CairnError {
  return new CairnError("ROOT_UNSAFE", `${path} is a ${fileKind(st)} where cairn keeps a ${want}; it is never followed`, {
    path,
    hint: "remove it, or give --out a new directory",
  });
}

function entries(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch (e) {
    if ((e as { code?: string }).code === "ENOENT") return [];
    throw ioError(dir, e, "read");
  }
}

function expect(path: string, kind: "file" | "dir"): void {
  const st = lstatSync(path);
  if (kind === "file" ? !st.isFile() : !st.isDirectory()) throw unsafe(path, st, kind === "file" ? "file" : "directory");
}

/** Refuses anything in DIR that cairn does not write there (see the header). */
export function checkResultsDir(dir: string): void {
  for (const name of entries(dir)) {
    const p = join(dir, name);
    const temp = TEMP.exec(name);
    if (TOP_FILES.includes(name)) expect(p, "file");
    else if (TOP_DIRS.includes(name)) expect(p, "dir");
    else if (temp !== null && [...TOP_FILES, ...TOP_DIRS].includes(temp[1]!)) continue;
    else throw foreign(p, "not a name cairn writes in a campaign results directory");
  }
  const tasks = join(dir, RESULTS.tasks);
  for (const name of entries(tasks)) {
    const p = join(tasks, name);
    if (parseTaskStaging(name) !== undefined) continue; // staging: removed once its writer is gone
    if (!TASK_NAME_RE.test(name)) throw foreign(p, "not a task name");
    expect(p, "dir");
    for (const f of entries(p)) {
      if (f !== RESULTS.result && f !== RESULTS.taskReceipt) throw foreign(join(p, f), "not a file a task publishes");
      expect(join(p, f), "file");
    }
  }
  const failures = join(dir, RESULTS.failures);
  for (const name of entries(failures)) {
    const p = join(failures, name);
    const temp = TEMP.exec(name);
    const base = temp !== null ? temp[1]! : name;
    if (!(base.endsWith(".json") && TASK_NAME_RE.test(base.slice(0, -5)))) throw foreign(p, "not a task's failure note");
    if (temp === null) expect(p, "file");
  }
  const runs = join(dir, RESULTS.runs);
  for (const name of entries(runs)) {
    const p = join(runs, name);
    if (name === RUNS_ROOT.marker) expect(p, "file");
    else if (TEMP.test(name)) continue;
    else if (/^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}$/.test(name)) expect(p, "dir");
    else throw foreign(p, "not a run directory name");
  }
}

/** Opens (creating when asked) and checks a campaign results directory. */
export function openResults(dir: string, create: boolean): void {
  openRoot(dir, CAMPAIGN_ROOT, { create });
  checkResultsDir(dir);
  if (create) for (const d of [RESULTS.tasks, RESULTS.failures]) mkdirSync(join(dir, d), { recursive: true, mode: 0o700 });
}

/** Removes task staging left by attempts whose process is gone (killed, a node that died). */
export function removeDeadTaskStaging(dir: string): void {
  const tasks = join(dir, RESULTS.tasks);
  for (const name of entries(tasks)) {
    const s = parseTaskStaging(name);
    if (s !== undefined && s.host === stagingHost() && s.pid !== process.pid && !processAlive(s.pid)) removeIn(tasks, "", name);
  }
}

/** The tasks that have published a result (a directory under tasks/ holding result.json). */
export function publishedTasks(dir: string): Set<string> {
  const out = new Set<string>();
  const tasks = join(dir, RESULTS.tasks);
  for (const name of entries(tasks)) if (TASK_NAME_RE.test(name) && entries(join(tasks, name)).includes(RESULTS.result)) out.add(name);
  return out;
}

export function taskDir(dir: string, id: string): string {
  return join(dir, RESULTS.tasks, id);
}

export interface TaskStaging {
  readonly dir: string;
  /** Renames the staging directory into tasks/<id>; false when another attempt published the task first (this one is discarded). */
  publish(): boolean;
  discard(): void;
}

/** A private staging directory for task `id`, removed if the process is interrupted. */
export function stageTask(dir: string, id: string): TaskStaging {
  const target = taskDir(dir, id);
  const staging = join(dir, RESULTS.tasks, `.${id}.${stagingHost()}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`);
  mkdirSync(staging, { mode: 0o700 });
  const forget = onInterrupt(() => rmSync(staging, { recursive: true, force: true }));
  const discard = () => {
    forget();
    rmSync(staging, { recursive: true, force: true });
  };
  return {
    dir: staging,
    publish() {
      try {
        renameSync(staging, target);
      } catch (e) {
        const code = (e as { code?: string }).code;
        if (code === "ENOTEMPTY" || code === "EEXIST") {
          discard();
          return false;
        }
        discard();
        throw ioError(target, e, "write");
      }
      forget();
      fsyncDir(join(dir, RESULTS.tasks));
      return true;
    },
    discard,
  };
}
