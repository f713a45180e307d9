/**
 * Taking `run.checkpoints` while QEMU records (issue 35 items 1 and 2). QEMU
 * is started with host-only additions (qemu.ts): a qcow2 drive attached to
 * no device (`-drive if=none,id=cairn-snap`), which holds the snapshots, a
 * QMP socket, and the input channel's socket (input-channel.ts). The agent
 * holds at each checkpoint (agent/main.c): after the step a checkpoint
 * follows is done, or once an invocation's output holds its text, it writes
 * a `hold` record and runs no further step until the host answers on the
 * input channel. The host follows the protocol stream the guest writes
 * (follow.ts, the file is only read); at each hold it stops the VM, reads
 * the instruction count (`query-replay`), saves the VM under the
 * checkpoint's name (`savevm` via `human-monitor-command`), lets it run on
 * (`cont`) and only then answers, so the snapshot holds the agent waiting
 * and no byte of the answer.
 *
 * Why this leaves the recording replayable from boot: the guest sees no
 * device more than the VM identity names (the drive has none), a
 * stop/continue under icount does not move the guest's clock, and the
 * answers are in the replay log; the replay runs with no drive, no monitor
 * and nothing connected to the channel. Where a checkpoint lands is exact in
 * the guest's own terms (after its step, no later step run); its instruction
 * count is whenever the host got to stop the guest, so it varies between two
 * records of one run and is recorded (it is also in the qcow2's table).
 */
import { chmodSync, mkdtempSync, rmSync, watch, type FSWatcher } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CairnError } from "../core/index.ts";
import type { CheckpointAfter, CheckpointSpec } from "./checkpoint-spec.ts";
import { ProtocolFollower } from "./follow.ts";
import { runTool } from "./host.ts";
import { InputChannel } from "./input-channel.ts";
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

/**
 * Answers the agent's holds while QEMU runs: at hold k, takes checkpoint k
 * (when a QMP socket is given: a record; a plain boot only answers), then
 * answers `continue`. A hold the host cannot answer ends the run: `failed`
 * aborts QEMU, and the reason is kept for the caller.
 */
export class CheckpointTaker {
  readonly #specs: readonly CheckpointSpec[];
  readonly #taken: TakenCheckpoint[] = [];
  readonly #missed: { name: string; reason: string }[] = [];
  readonly #held = new Set<number>();
  readonly #follower: ProtocolFollower;
  readonly #watcher: FSWatcher | undefined;
  readonly #timer: NodeJS.Timeout;
  readonly #abort = new AbortController();
  #failure: string | undefined;
  #qmp: QmpClient | undefined;
  #work: Promise<void> = Promise.resolve();
  #ended = false;

  constructor(
    specs: readonly CheckpointSpec[],
    protocolLog: string,
    private readonly channel: InputChannel,
    private readonly qmpPath: string | undefined,
  ) {
    this.#specs = specs;
    this.#follower = new ProtocolFollower(protocolLog, undefined, (t, _i, b) => this.#record(t, b));
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

  /** Aborted when a hold could not be answered (the guest would wait for ever). */
  get failed(): AbortSignal {
    return this.#abort.signal;
  }

  /** Why the host could not answer a hold, once `failed` has fired. */
  get failure(): string | undefined {
    return this.#failure;
  }

  #record(type: number, body: Buffer): void {
    if (this.#ended || type !== RECORD.hold || body.length !== 16) return;
    const hold = body.readUInt32LE(0);
    if (this.#held.has(hold)) return; // the agent holds once per checkpoint; a repeat is the decoder's to refuse
    this.#held.add(hold);
    this.#work = this.#work.then(() => this.#answer(hold));
  }

  async #answer(hold: number): Promise<void> {
    const spec = this.#specs[hold];
    if (spec !== undefined && this.qmpPath !== undefined) await this.#take(spec);
    try {
      await this.channel.answer(hold, { kind: "continue" });
    } catch (e) {
      this.#failure = `the host could not answer the guest at checkpoint ${spec?.name ?? hold}: ${e instanceof Error ? e.message : String(e)}`;
      this.#abort.abort();
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
      this.#qmp ??= QmpClient.connect(this.qmpPath!);
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
    this.channel.close();
    const taken = new Set([...this.#taken, ...this.#missed].map((t) => t.name));
    for (const s of this.#specs) if (!taken.has(s.name)) this.#missed.push({ name: s.name, reason: "its event never came" });
    return { taken: [...this.#taken], missed: [...this.#missed] };
  }
}

/** The snapshots' file in a run directory (private: it holds the guest's RAM). */
export const CHECKPOINT_FILE = "checkpoints.qcow2";
/** run.checkpoint-file-bytes: a qcow2 of snapshots read to hash it (16 checkpoints of a 16 GiB guest fit). */
export const CHECKPOINT_FILE_MAX_BYTES = 256 * 1024 * 1024 * 1024;
export const QEMU_IMG_FIX = "install qemu-img: apt-get install -y qemu-utils (or run `cairn setup` as root)";
/** The qcow2's virtual disk: never used by the guest (no device), only the snapshots' VM state is stored. */
const DRIVE_SIZE = "1M";

/**
 * A branch's boot (branch.ts): the qcow2 that holds the snapshot it starts
 * from, QEMU's `rrsnapshot` name for that start, and when recording, the
 * parent's checkpoint to load and the steps to answer the agent's hold with.
 */
export interface BranchSnapshot {
  readonly drive: string;
  readonly rrsnapshot: string;
  readonly record?: { readonly loadvm: string; readonly hold: number; readonly steps: readonly Step[] };
  /** The parent's protocol stream up to its hold: the branch's own stream continues it, and is decoded with it. */
  readonly prefix: Buffer;
}

/** What the host adds to QEMU's command line for a run with an input channel (qemu.ts QemuPaths). */
export interface ChannelPaths {
  readonly inputSocket?: string;
  readonly checkpoints?: { readonly drive: string; readonly qmp?: string };
  readonly snapshot?: { readonly loadvm?: string; readonly rrsnapshot: string };
}

/**
 * Runs `boot` with what a run with an input channel needs on the host (the
 * VM identity names the channel: `serial` holds "input"):
 * - a record: a fresh qcow2 in `dir` and a QMP socket, checkpoints taken at
 *   the agent's holds, each answered `continue` after it is taken;
 * - a plain boot: holds answered `continue`, nothing taken;
 * - a replay: the socket only, nothing connected (the answers replay from the log);
 * - a branch (`branch`): its qcow2 and start, and in a record, the tail sent at once.
 * Without a channel, `boot` runs as it is. The sockets live in a private
 * directory of their own under the temp dir (a Unix socket path must stay
 * under 108 bytes), removed after, on an interrupt too.
 */
export async function withInputChannel<T>(
  run: {
    readonly channel: boolean;
    readonly mode: "record" | "replay" | "none";
    readonly specs: readonly CheckpointSpec[] | undefined;
    readonly branch?: BranchSnapshot;
    readonly dir: string;
    readonly protocolLog: string;
  },
  boot: (paths: ChannelPaths, abort: AbortSignal | undefined) => Promise<T>,
): Promise<{ result: T; checkpoints?: CheckpointOutcome & { readonly file: string }; channelFailure?: string }> {
  if (!run.channel) return { result: await boot({}, undefined) };
  const sockets = mkdtempSync(join(tmpdir(), "cairn-chan-")); // 0700
  const removeSockets = (): void => rmSync(sockets, { recursive: true, force: true });
  const forget = onInterrupt(removeSockets);
  const inputSocket = join(sockets, "input.sock");
  const channel = new InputChannel(inputSocket);
  try {
    if (run.branch !== undefined) {
      const b = run.branch;
      const snapshot = { rrsnapshot: b.rrsnapshot, ...(b.record !== undefined ? { loadvm: b.record.loadvm } : {}) };
      if (b.record === undefined || run.mode !== "record") return { result: await boot({ inputSocket, checkpoints: { drive: b.drive }, snapshot }, undefined) };
      // the agent waits at the parent's hold in the snapshot: the tail goes as soon as QEMU listens
      const abort = new AbortController();
      let failure: unknown;
      const sent = channel.answer(b.record.hold, { kind: "tail", steps: b.record.steps }).catch((e: unknown) => {
        failure = e;
        abort.abort();
      });
      const result = await boot({ inputSocket, checkpoints: { drive: b.drive }, snapshot }, abort.signal);
      await sent;
      // said by the caller, who knows whether QEMU ended by itself or was stopped by the host's timeout (then the timeout is the cause)
      if (failure !== undefined)
        return { result, channelFailure: `the branch's steps could not be sent to the guest: ${failure instanceof Error ? failure.message : String(failure)}` };
      return { result };
    }
    if (run.mode === "replay") return { result: await boot({ inputSocket }, undefined) };
    const specs = run.specs ?? [];
    let drive: string | undefined;
    let qmp: string | undefined;
    if (run.mode === "record" && specs.length > 0) {
      drive = join(run.dir, CHECKPOINT_FILE);
      const made = runTool("qemu-img", ["create", "-q", "-f", "qcow2", drive, DRIVE_SIZE], { fix: QEMU_IMG_FIX });
      if (made.status !== 0)
        throw new CairnError("RUN_INFRASTRUCTURE", `qemu-img could not create the checkpoint file: ${made.stderr.trim()}`, { path: drive });
      chmodSync(drive, 0o600);
      qmp = join(sockets, "qmp.sock");
    }
    const taker = new CheckpointTaker(specs, run.protocolLog, channel, qmp);
    let result: T;
    try {
      result = await boot({ inputSocket, ...(drive !== undefined ? { checkpoints: { drive, ...(qmp !== undefined ? { qmp } : {}) } } : {}) }, taker.failed);
    } catch (e) {
      await taker.finish();
      throw e;
    }
    const outcome = await taker.finish();
    if (taker.failure !== undefined) throw new CairnError("RUN_INFRASTRUCTURE", taker.failure);
    return { result, ...(drive !== undefined ? { checkpoints: { ...outcome, file: drive } } : {}) };
  } finally {
    channel.close();
    removeSockets();
    forget();
  }
}
