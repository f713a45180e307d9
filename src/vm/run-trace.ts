/**
 * `cairn runs show RUN --trace OUT.json`: the run's timeline in the Chrome
 * trace-event format (a JSON object with `traceEvents`), which Perfetto and
 * chrome://tracing open. One process for the run, one thread per lane (the
 * run itself, then each invocation, named by `M` metadata events), each
 * invocation a complete event (`ph: "X"`) from its first event to its last,
 * each event an instant (`ph: "i"`).
 *
 * The guest's events carry no time, so the trace's clock is their order:
 * event N is at N × `TRACE_TICK_US` microseconds (`otherData.time_axis` says
 * so). The run's real measures, guest instructions and the record's host
 * time, are in `otherData`, never spread over the events as if they were
 * timings.
 */
import type { RunView } from "./run-view.ts";

/** Microseconds between two consecutive events on the trace's clock (its axis is event order). */
export const TRACE_TICK_US = 1000;

const PID = 1;

export interface TraceEvent {
  readonly name: string;
  readonly ph: "X" | "i" | "M";
  readonly pid: number;
  readonly tid: number;
  readonly ts?: number;
  readonly dur?: number;
  readonly s?: "t" | "p" | "g";
  readonly cat?: string;
  readonly args?: Record<string, unknown>;
}

export interface RunTrace {
  readonly traceEvents: readonly TraceEvent[];
  readonly displayTimeUnit: "ms";
  readonly otherData: Record<string, string | number | null | ReadonlyArray<Record<string, string | number>>>;
}

export function runTrace(v: RunView): RunTrace {
  const s = v.summary;
  const lanes = [0, ...v.invocations.map((i) => i.invocation)];
  const events: TraceEvent[] = [
    {
      name: "process_name",
      ph: "M",
      pid: PID,
      tid: 0,
      args: {
        name: v.replay === null ? `cairn run ${s.run_id} (${s.status})` : `cairn replay ${v.replay.n} of ${s.run_id} (${v.replay.status ?? "no result"})`,
      },
    },
    ...lanes.map((inv): TraceEvent => ({ name: "thread_name", ph: "M", pid: PID, tid: inv, args: { name: inv === 0 ? "run" : `invocation ${inv}` } })),
    ...lanes.map((inv, i): TraceEvent => ({ name: "thread_sort_index", ph: "M", pid: PID, tid: inv, args: { sort_index: i } })),
  ];
  for (const inv of v.invocations)
    events.push({
      name: `invocation ${inv.invocation}`,
      cat: "invocation",
      ph: "X",
      pid: PID,
      tid: inv.invocation,
      ts: inv.first * TRACE_TICK_US,
      dur: (inv.last - inv.first + 1) * TRACE_TICK_US,
      args: { ended: inv.ended, stdout_bytes: inv.stdout.bytes, stderr_bytes: inv.stderr.bytes },
    });
  for (const it of v.items)
    events.push({
      name: it.label,
      cat: it.kind,
      ph: "i",
      s: "t",
      pid: PID,
      tid: it.invocation,
      ts: it.index * TRACE_TICK_US,
      args: { index: it.index, event: JSON.parse(it.json) as unknown },
    });
  for (const r of v.replays)
    if (r.difference !== null)
      events.push({
        name: `replay ${r.n} differs at ${r.difference.pointer}`,
        cat: "replay",
        ph: "i",
        s: "p",
        pid: PID,
        tid: 0,
        ts: (r.difference.event ?? v.items.length) * TRACE_TICK_US,
        args: { pointer: r.difference.pointer, recorded: r.difference.recorded, replayed: r.difference.replayed },
      });
  return {
    traceEvents: events,
    displayTimeUnit: "ms",
    otherData: {
      run_id: s.run_id,
      replay: v.replay?.n ?? null,
      status: s.status,
      check: s.check,
      time_axis: `event order: event N is at N x ${TRACE_TICK_US} us; the guest's events carry no time`,
      guest_instructions: v.guest_instructions,
      host_wall_ms: v.cost.wall_ms,
      host_cpu_ms: v.cost.host_cpu_ms,
      // taken at guest instruction counts, which the event-order clock cannot place: listed, not drawn
      checkpoints: v.checkpoints.map((c) => ({ name: c.name, after: c.after, icount: c.icount })),
      workload: s.workload,
      vm: s.vm_digest,
      outcome: s.outcome,
    },
  };
}
