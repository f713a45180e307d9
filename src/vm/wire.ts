/**
 * The single definition of the numbers shared with the guest agent
 * (agent/agent.h): record types, launch-failure stages, infrastructure
 * failure reasons, and the magics and versions of the two binary formats
 * (protocol `cairn.protocol/1` guest → host, inputs `cairn.inputs/1`
 * host → guest). tests/vm/wire.test.ts checks these against agent.h.
 */
export const PROTOCOL_MAGIC = "CAIRNPR1";
export const PROTOCOL_VERSION = 1;
export const INPUTS_MAGIC = "CAIRNIN1";
export const INPUTS_VERSION = 1;

export const RECORD = {
  hello: 1,
  start: 2,
  frame: 3,
  "input-accepted": 4,
  "stdin-closed": 5,
  "requested-termination": 6,
  exit: 7,
  "launch-failure": 8,
  "cleanup-complete": 9,
  "infra-failure": 10,
  final: 11,
  "input-rejected": 12,
  /** A run with checkpoints: the agent stopped running steps at a checkpoint and waits for the host on the input channel (input-channel.ts). */
  hold: 13,
} as const;
export type RecordName = keyof typeof RECORD;

/** The records a scenario can wait for (`after: {event}`) and a run reports as events: agent record names. */
export const EVENT_NAMES = [
  "start",
  "input-accepted",
  "input-rejected",
  "stdin-closed",
  "requested-termination",
  "exit",
  "launch-failure",
  "cleanup-complete",
] as const;
export type EventName = (typeof EVENT_NAMES)[number];

/** The record type an `after: {event}` trigger waits for. */
export function eventRecordType(event: EventName): number {
  return RECORD[event];
}

export const LAUNCH_STAGES: Readonly<Record<number, string>> = {
  1: "busy",
  2: "credentials",
  3: "root",
  4: "overlay",
  5: "pipes",
  6: "fork",
  7: "fds",
  8: "chroot",
  9: "chdir",
  10: "setgroups",
  11: "no-new-privs",
  12: "setgid",
  13: "setuid",
  14: "exec",
};

export const INFRA_REASONS: Readonly<Record<number, string>> = {
  1: "output-limit",
  2: "stdin-queue-limit",
  3: "bad-input-offset",
  4: "transport",
  5: "time-limit",
  6: "scenario-stuck",
  7: "cleanup",
  8: "inputs-malformed",
  9: "no-invocation",
  10: "tree-mismatch",
  11: "network",
  12: "channel",
};

export const ACTION = { start: 1, "write-stdin": 2, "close-stdin": 3, terminate: 4, "network-down": 5, "network-up": 6 } as const;
export const TRIGGER = { none: 0, event: 1, output: 2 } as const;
export const STREAM = { stdout: 1, stderr: 2 } as const;
/** A hold's kind in the inputs (agent.h `enum hold_kind`). */
export const HOLD = { step: 1, output: 2 } as const;
/** The input channel's messages (agent/chan.c): magic, then u32 hold | u8 kind | u32 length | body. */
export const CHANNEL_MAGIC = "CAIRNCH1";
export const CHANNEL_KIND = { continue: 1, tail: 2 } as const;
/** agent.h CHANNEL_MAX: the largest message body the agent reads. */
export const CHANNEL_MAX_BYTES = 16 * 1024 * 1024;
