/**
 * Encodes the run's recorded inputs for the agent (`/cairn/inputs` in the
 * initramfs, format `cairn.inputs/1`, parsed by agent/inputs.c): limits,
 * launch values, and the scenario steps. Everything is little-endian;
 * strings and byte strings are u32 length + bytes. The same launch and
 * scenario always give the same bytes.
 */
import { CairnError } from "../core/index.ts";
import type { CheckpointSpec } from "./checkpoint-spec.ts";
import type { Scenario, Step } from "./scenario.ts";
import { ACTION, HOLD, INPUTS_MAGIC, INPUTS_VERSION, STREAM, TRIGGER, eventRecordType } from "./wire.ts";

/** The launch values the agent applies (from the workload's launch identity). */
export interface GuestLaunch {
  /** Executable path inside the workload root (execve'd directly: no shell, no PATH search). */
  readonly path: string;
  readonly argv: readonly string[];
  /** `KEY=VALUE` entries, in the launch identity's order. */
  readonly env: readonly string[];
  readonly workdir: string;
  readonly uid: number;
  readonly gid: number;
}

class Encoder {
  private readonly parts: Buffer[] = [];
  u8(v: number): void {
    this.parts.push(Buffer.of(v));
  }
  u32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    this.parts.push(b);
  }
  u64(v: number): void {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    this.parts.push(b);
  }
  bytes(v: Uint8Array): void {
    this.u32(v.length);
    this.parts.push(Buffer.from(v));
  }
  str(v: string, path: string): void {
    // a NUL would silently cut an argv or env entry short in the guest
    if (v.includes("\0")) throw new CairnError("LAUNCH_INVALID", "launch value contains a NUL byte", { path });
    this.bytes(Buffer.from(v, "utf8"));
  }
  done(): Buffer {
    return Buffer.concat(this.parts);
  }
}

export function encodeInputs(launch: GuestLaunch, scenario: Scenario): Buffer {
  const body = new Encoder();
  body.u32(INPUTS_VERSION);
  body.u64(scenario.limits.outputBytes);
  body.u64(scenario.limits.timeMs);
  body.u64(scenario.limits.stdinQueueBytes);
  body.u32(scenario.limits.frameBytes);
  body.u32(launch.uid);
  body.u32(launch.gid);
  body.str(launch.path, "/launch/path");
  body.str(launch.workdir, "/launch/workdir");
  body.u32(launch.argv.length);
  launch.argv.forEach((a, i) => {
    body.str(a, `/launch/argv/${i}`);
  });
  body.u32(launch.env.length);
  launch.env.forEach((a, i) => {
    body.str(a, `/launch/env/${i}`);
  });
  writeSteps(body, scenario.steps);
  // a run with checkpoints: the holds follow the steps; without them nothing is written, so other runs keep their bytes
  if (scenario.checkpoints !== undefined && scenario.checkpoints.length > 0) writeHolds(body, scenario.checkpoints);
  return Buffer.concat([Buffer.from(INPUTS_MAGIC, "ascii"), body.done()]);
}

function writeSteps(body: Encoder, steps: readonly Step[]): void {
  body.u32(steps.length);
  for (const s of steps) {
    body.u8(ACTION[s.action]);
    const t = s.after;
    body.u8(TRIGGER[t.kind]);
    body.u8(t.kind === "event" ? eventRecordType(t.event) : t.kind === "output" ? STREAM[t.stream] : 0);
    body.bytes(t.kind === "output" ? Buffer.from(t.contains, "utf8") : Buffer.alloc(0));
    body.u64(s.action === "write-stdin" ? s.offset : 0);
    body.bytes(s.action === "write-stdin" ? s.data : Buffer.alloc(0));
  }
}

/** Each checkpoint is a hold of the agent, in run.checkpoints' order (its index is the hold's number). */
function writeHolds(body: Encoder, checkpoints: readonly CheckpointSpec[]): void {
  body.u32(checkpoints.length);
  for (const c of checkpoints) {
    const a = c.after;
    body.u8(a.kind === "step" ? HOLD.step : HOLD.output);
    body.u8(a.kind === "output" ? STREAM[a.stream] : 0);
    body.u32(a.kind === "step" ? a.step : 0);
    body.bytes(a.kind === "output" ? Buffer.from(a.contains, "utf8") : Buffer.alloc(0));
  }
}

/** A step list as the input channel's tail message carries it (agent/chan.c): the inputs file's encoding of steps. */
export function encodeSteps(steps: readonly Step[]): Buffer {
  const body = new Encoder();
  writeSteps(body, steps);
  return body.done();
}
