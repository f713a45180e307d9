/**
 * Taking `run.checkpoints` while QEMU records (issue 35 item 1). QEMU is
 * started with two host-only additions (qemu.ts): a qcow2 drive that is
 * attached to no device (`-drive if=none,id=cairn-snap`), which holds the
 * snapshots, and a QMP socket. The host follows the protocol stream the
 * guest writes (follow.ts, the file is only read); when a checkpoint's event
 * shows there, it stops the VM, reads the instruction count
 * (`query-replay`), saves the VM under the checkpoint's name (`savevm` via
 * `human-monitor-command`) and lets it run on (`cont`).
 *
 * Why this leaves the recording replayable from boot: the guest sees no
 * device more (the drive has none), and a stop/continue under icount does
 * not move the guest's clock; the replay runs the plain command line, with no
 * drive and no monitor, and matched in the spike and in
 * tests/vm/checkpoint.test.ts. What it does not promise: the point where a
 * checkpoint lands is whenever the host got to stop the guest after the
 * event, so it varies between two records of one run; the instruction count
 * recorded for it is exact (it is also in the qcow2's own snapshot table).
 */
import { chmodSync, mkdtempSync, rmSync, watch, type FSWatcher } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CairnError } from "../core/index.ts";
import type { CheckpointAfter, CheckpointSpec } from "./checkpoint-spec.ts";
import { ProtocolFollower } from "./follow.ts";
import { runTool } from "./host.ts";
import { onInterrupt } from "./interrupt.ts";
import { QmpClient } from "./qmp.ts";
import type { Step } from "./scenario.ts";
import { RECORD } from "./wire.ts";

export interface TakenCheckpoint {
  readonly name: string;
  readonly after: CheckpointAfter;
  /** The guest's instruction count at the checkpoint (QEMU's `query-replay` while the VM was stopped). */
  readonly icount: number;
  /** Host wall time the guest was stopped for (stop, savevm, cont): provenance, never compared. */
  readonly pauseMs: number;
}

export interface CheckpointOutcome {
  readonly taken: readonly TakenCheckpoint[];
  /** Declared but not taken, with why (the guest ended before the event, or QEMU refused). */
  readonly missed: ReadonlyArray<{ readonly name: string; readonly reason: string }>;
}

/** How often the protocol file is read besides on change notifications (host ms). */
const POLL_MS = 100;
/** `savevm` is refused while record/replay has events pending ("Try once more later"): tried this many times. */
const SAVEVM_ATTEMPTS = 20;
const SAVEVM_RETRY_MS = 20;

type Matcher = (type: number, invocation: number, body: Buffer) => boolean;

/**
 * For each step, the agent record that says it was done: the single
 * definition of "after step N" (checkpoint-spec.ts names the rule).
 */
export function stepMatchers(steps: readonly Step[]): (Matcher | undefined)[] {
  let invocation = 0;
  return steps.map((s): Matcher | undefined => {
    if (s.action === "start") invocation++;
    const inv = invocation;
    switch (s.action) {
      case "start":
        return (t, i) => t === RECORD.start && i === inv;
      case "write-stdin": {
        const end = s.offset + s.data.length;
        return (t, i, body) =>
          (t === RECORD["input-accepted"] || t === RECORD["input-rejected"]) &&
          i === inv &&
          body.length === 12 &&
          Number(body.readBigUInt64LE(0)) + body.readUInt32LE(8) >= end;
      }
      case "close-stdin":
        return (t, i) => t === RECORD["stdin-closed"] && i === inv;
      case "terminate":
        return (t, i) => t === RECORD["requested-termination"] && i === inv;
      default:
        return undefined; // network steps write no record (refused by the spec parser)
    }
  });
}

export class CheckpointTaker {
  readonly #pending: { spec: CheckpointSpec; matches: (type: number, invocation: number, body: Buffer) => boolean }[];
  readonly #taken: TakenCheckpoint[] = [];
  readonly #missed: { name: string; reason: string }[] = [];
  readonly #follower: ProtocolFollower;
  readonly #watcher: FSWatcher | undefined;
  readonly #timer: NodeJS.Timeout;
  /** The tail of each invocation's streams, long enough to find a pattern split across frames. */
  readonly #tails = new Map<string, Buffer>();
  #qmp: QmpClient | undefined;
  #work: Promise<void> = Promise.resolve();
  #ended = false;

  constructor(
    specs: readonly CheckpointSpec[],
    steps: readonly Step[],
    protocolLog: string,
    private readonly qmpPath: string,
  ) {
    const matchers = stepMatchers(steps);
    this.#pending = specs.map((spec) => ({ spec, matches: this.#matcher(spec.after, matchers) }));
    this.#follower = new ProtocolFollower(protocolLog, undefined, (t, i, b) => this.#record(t, i, b));
    const poll = (): void => this.#follower.poll();
    try {
      this.#watcher = watch(protocolLog, poll);
      this.#watcher.on("error", () => {});
      this.#watcher.unref(); // following a file never keeps the process alive by itself (QEMU's child process does)
    } catch {
      this.#watcher = undefined; // the interval below still reads it
    }
    this.#timer = setInterval(poll, POLL_MS);
    this.#timer.unref();
  }

  #matcher(after: CheckpointAfter, steps: readonly (Matcher | undefined)[]): Matcher {
    if (after.kind === "step") return steps[after.step] ?? (() => false);
    const pattern = Buffer.from(after.contains, "utf8");
    const stream = after.stream === "stdout" ? 1 : 2;
    return (t, i, body) => {
      if (t !== RECORD.frame || body[0] !== stream) return false;
      const key = `${i}/${stream}`;
      const seen = Buffer.concat([this.#tails.get(key) ?? Buffer.alloc(0), body.subarray(9)]);
      return seen.includes(pattern);
    };
  }

  #record(type: number, invocation: number, body: Buffer): void {
    if (this.#ended) return;
    const fired = this.#pending.filter((p) => p.matches(type, invocation, body));
    if (type === RECORD.frame && (body[0] === 1 || body[0] === 2)) {
      const key = `${invocation}/${body[0]}`;
      const seen = Buffer.concat([this.#tails.get(key) ?? Buffer.alloc(0), body.subarray(9)]);
      this.#tails.set(key, Buffer.from(seen.subarray(Math.max(0, seen.length - 256))));
    }
    for (const p of fired) {
      this.#pending.splice(this.#pending.indexOf(p), 1);
      this.#work = this.#work.then(() => this.#take(p.spec));
    }
  }

  async #take(spec: CheckpointSpec): Promise<void> {
    if (this.#ended) {
      this.#missed.push({ name: spec.name, reason: "the guest ended before the host could stop it" });
      return;
    }
    const started = performance.now();
    let stopped = false;
    try {
      this.#qmp ??= QmpClient.connect(this.qmpPath);
      await this.#qmp.ready;
      await this.#qmp.command("stop");
      stopped = true;
      const replay = (await this.#qmp.command("query-replay")) as { mode?: string; icount?: unknown } | undefined;
      const icount = replay?.icount;
      if (replay?.mode !== "record" || typeof icount !== "number" || !Number.isSafeInteger(icount))
        throw new CairnError("RUN_INFRASTRUCTURE", `QEMU's query-replay gave no instruction count (${JSON.stringify(replay)})`);
      for (let attempt = 1; ; attempt++) {
        const said = (await this.#qmp.human(`savevm ${spec.name}`)).trim();
        if (said === "") break;
        // record/replay refuses a snapshot while it has events pending: let the guest run a little and try again
        if (!/once more later/i.test(said) || attempt >= SAVEVM_ATTEMPTS) throw new CairnError("RUN_INFRASTRUCTURE", `QEMU's savevm said: ${said}`);
        await this.#qmp.command("cont");
        await new Promise((r) => setTimeout(r, SAVEVM_RETRY_MS));
        await this.#qmp.command("stop");
      }
      const after = (await this.#qmp.command("query-replay")) as { icount?: unknown } | undefined;
      await this.#qmp.command("cont");
      stopped = false;
      // the count read after the save is the one the snapshot holds (a retry let the guest run on)
      const at = typeof after?.icount === "number" ? after.icount : icount;
      this.#taken.push({ name: spec.name, after: spec.after, icount: at, pauseMs: Math.round(performance.now() - started) });
    } catch (e) {
      if (stopped) await this.#qmp?.command("cont").catch(() => {});
      this.#missed.push({ name: spec.name, reason: e instanceof Error ? e.message : String(e) });
    }
  }

  /** After QEMU has ended: stops following and reports what was taken. */
  async finish(): Promise<CheckpointOutcome> {
    this.#follower.poll();
    this.#ended = true;
    clearInterval(this.#timer);
    this.#watcher?.close();
    this.#follower.stop();
    await this.#work;
    this.#qmp?.close();
    for (const p of this.#pending) this.#missed.push({ name: p.spec.name, reason: "its event never came" });
    return { taken: [...this.#taken], missed: [...this.#missed] };
  }
}

/** The snapshots' file in a run directory (private: it holds the guest's RAM). */
export const CHECKPOINT_FILE = "checkpoints.qcow2";
export const QEMU_IMG_FIX = "install qemu-img: apt-get install -y qemu-utils (or run `cairn setup` as root)";
/** The qcow2's virtual disk: never used by the guest (no device), only the snapshots' VM state is stored. */
const DRIVE_SIZE = "1M";

/**
 * Runs `record` with the checkpoint drive and QMP socket when the scenario
 * declares checkpoints (else plainly), taking each as its event shows in
 * `protocolLog`. The qcow2 is made in `dir`; the QMP socket in a private
 * directory of its own under the temp dir (a Unix socket path must stay
 * under 108 bytes), removed after, on an interrupt too.
 */
export async function recordWithCheckpoints<T>(
  specs: readonly CheckpointSpec[] | undefined,
  steps: readonly Step[],
  dir: string,
  protocolLog: string,
  record: (files: { drive: string; qmp: string } | undefined) => Promise<T>,
): Promise<{ result: T; checkpoints?: CheckpointOutcome & { readonly file: string } }> {
  if (specs === undefined || specs.length === 0) return { result: await record(undefined) };
  const drive = join(dir, CHECKPOINT_FILE);
  const made = runTool("qemu-img", ["create", "-q", "-f", "qcow2", drive, DRIVE_SIZE], { fix: QEMU_IMG_FIX });
  if (made.status !== 0) throw new CairnError("RUN_INFRASTRUCTURE", `qemu-img could not create the checkpoint file: ${made.stderr.trim()}`, { path: drive });
  chmodSync(drive, 0o600);
  const qmpDir = mkdtempSync(join(tmpdir(), "cairn-qmp-")); // 0700
  const removeQmp = (): void => rmSync(qmpDir, { recursive: true, force: true });
  const forget = onInterrupt(removeQmp);
  const qmp = join(qmpDir, "qmp.sock");
  const taker = new CheckpointTaker(specs, steps, protocolLog, qmp);
  try {
    let result: T;
    try {
      result = await record({ drive, qmp });
    } catch (e) {
      await taker.finish();
      throw e;
    }
    const outcome = await taker.finish();
    return { result, checkpoints: { ...outcome, file: drive } };
  } finally {
    removeQmp();
    forget();
  }
}
