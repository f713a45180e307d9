/**
 * One `campaign run` at a time on a results directory: `DIR/campaign.lock`,
 * taken atomically (the holder's file is written whole under a private name,
 * then hard-linked to the lock's name, which fails when the name exists) and
 * released when the run ends, throws, or is interrupted (vm/interrupt.ts).
 * Two runs of one campaign at once would both hand the same missing tasks to
 * their executors (each task would run twice, two Slurm arrays would race
 * for the same results) and both rewrite the failure notes and the campaign
 * receipt; the second is refused, CAMPAIGN_BUSY naming the holder.
 *
 * A lock left by a process that is gone (killed with SIGKILL, a crash) is
 * taken over, said on stderr: the holder is named by its host, pid and the
 * pid's start time (/proc/PID/stat), so a pid reused by another process is
 * not taken for the holder. A lock held on another host is never taken over
 * (its pid says nothing here): CAMPAIGN_BUSY says to remove it by hand once
 * that run is known to be gone.
 */
import { randomBytes } from "node:crypto";
import { linkSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CairnError, ioError, isJsonObject, parseJsonBytes, readFileBounded } from "../core/index.ts";
import { onInterrupt, processStartTime } from "../vm/index.ts";
import { RESULTS, stagingHost } from "./results-dir.ts";

export const LOCK_SCHEMA = "cairn.campaign-lock/1";
const LOCK_MAX_BYTES = 4096;

interface Holder {
  readonly host: string;
  readonly pid: number;
  readonly start: string;
  readonly token: string;
}

/** A held lock: `release` removes it if it is still this process's (idempotent). */
export interface CampaignLock {
  release(): void;
}

const errno = (e: unknown): string | undefined => (e as { code?: string } | null)?.code;

function tempName(dir: string): string {
  return join(dir, `.${RESULTS.lock}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`);
}

/** The holder named by a lock file, or undefined when it is gone or is not a lock cairn wrote. */
function readHolder(file: string): Holder | "gone" | undefined {
  let bytes: Buffer;
  try {
    bytes = readFileBounded(file, LOCK_MAX_BYTES, "campaign.lock-bytes", { missing: "IO_ERROR", notRegular: "ROOT_UNSAFE" });
  } catch (e) {
    if (e instanceof CairnError && e.code === "IO_ERROR" && /does not exist/.test(e.message)) return "gone";
    throw e;
  }
  try {
    const o = parseJsonBytes(bytes, { source: file });
    if (!isJsonObject(o) || o.schema !== LOCK_SCHEMA) return undefined;
    const { host, pid, start, token } = o;
    if (typeof host !== "string" || typeof pid !== "number" || !Number.isSafeInteger(pid) || pid < 1) return undefined;
    if (typeof start !== "string" || typeof token !== "string") return undefined;
    return { host, pid, start, token };
  } catch (e) {
    if (e instanceof CairnError) return undefined;
    throw e;
  }
}

function busy(dir: string, file: string, message: string, hint: string): CairnError {
  return new CairnError("CAMPAIGN_BUSY", `${dir}: ${message}`, { path: file, hint });
}

/**
 * Takes DIR's lock or throws CAMPAIGN_BUSY; `log` hears of a stale lock
 * taken over. The lock is released by `release`, and on an interrupt.
 */
export function lockCampaign(dir: string, log: (line: string) => void = () => {}): CampaignLock {
  const file = join(dir, RESULTS.lock);
  const start = processStartTime(process.pid) ?? "";
  const me: Holder = { host: stagingHost(), pid: process.pid, start, token: randomBytes(12).toString("hex") };
  const temp = tempName(dir);
  try {
    writeFileSync(temp, `${JSON.stringify({ schema: LOCK_SCHEMA, ...me })}\n`, { mode: 0o600, flag: "wx" });
  } catch (e) {
    throw ioError(temp, e, "write");
  }
  let held = false;
  try {
    // two attempts: the second after a stale lock was moved away
    for (let attempt = 0; attempt < 2 && !held; attempt++) {
      try {
        linkSync(temp, file);
        held = true;
        break;
      } catch (e) {
        if (errno(e) !== "EEXIST") throw ioError(file, e, "create");
      }
      const holder = readHolder(file);
      if (holder === "gone") continue; // released between the link and the read
      if (holder === undefined)
        throw busy(dir, file, `${RESULTS.lock} is not a lock cairn wrote`, "if no `cairn campaign run` uses this directory, remove the file");
      const said = `host ${holder.host}, pid ${holder.pid}`;
      if (holder.host !== me.host)
        throw busy(
          dir,
          file,
          `another \`cairn campaign run\` holds it (${said})`,
          "wait for it to end; a lock held on another host is never taken over: remove the file once that run is known to be gone",
        );
      const now = processStartTime(holder.pid);
      if (holder.start !== "" ? now === holder.start : now !== undefined)
        throw busy(dir, file, `another \`cairn campaign run\` holds it (${said})`, "wait for it to end, or interrupt it (its lock is released then)");
      if (attempt > 0) throw busy(dir, file, "its lock was taken over by another run at the same time", "run again once that run ends");
      // stale: moved away under a private name (one process wins the rename); the one moved must be the stale one read
      const away = tempName(dir);
      try {
        renameSync(file, away);
      } catch (e) {
        if (errno(e) === "ENOENT") continue;
        throw ioError(file, e, "rename");
      }
      const moved = readHolder(away);
      if (moved === "gone" || moved === undefined || moved.token !== holder.token) {
        // another process replaced the stale lock between the read and the rename: put its lock back, and refuse
        try {
          linkSync(away, file);
        } catch {
          // a third one holds it now; ours was never taken
        }
        rmSync(away, { force: true });
        throw busy(dir, file, "another `cairn campaign run` took the lock over at the same time", "run again once that run ends");
      }
      rmSync(away, { force: true });
      log(`took over the lock of ${said}, which is no longer running (a campaign run killed without releasing it)`);
    }
  } finally {
    rmSync(temp, { force: true });
  }
  if (!held) throw busy(dir, file, "its lock changed hands while it was taken", "run again");
  let released = false;
  const release = (): void => {
    if (released) return;
    released = true;
    forget();
    const h = readHolder(file);
    if (h !== "gone" && h !== undefined && h.token === me.token) rmSync(file, { force: true });
  };
  const forget = onInterrupt(() => release());
  return { release };
}
