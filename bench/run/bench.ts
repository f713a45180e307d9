/**
 * Run measurements (issue 5, part 8), side by side in one process:
 * the same guest booted under plain TCG (same icount, no record), recorded,
 * and replayed, reported as ratios; guest image size and build time as the
 * workload grows; replay-log size; output volume through the protocol port;
 * and any divergence between the three modes' normalized events.
 *
 *   node --import tsx bench/run/bench.ts [--quick] [--only=<case label part>] [--reps=N]
 *
 * With --reps=N each case boots N times per mode (interleaved) and reports medians.
 *
 * Goals from the issue: record ≤ 1.5× plain, replay ≤ 1.2× record.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { canonicalize, sha256, type Sha256Digest } from "../../src/core/index.ts";
import type { FsEntry } from "../../src/tree/entries.ts";
import { assembleWorkload } from "../../src/workload/assemble.ts";
import { bootGuest, DEFAULT_RUN_LIMITS, evaluate, prepareGuest, qemuVersion, type Scenario } from "../../src/vm/index.ts";
import { replayLogEvents } from "../../src/vm/replay-log.ts";
import { childrenCpuMs } from "../../src/vm/run-facts.ts";
import { probeBytes, probePath } from "../../tests/vm/fixtures/programs.ts";
import { testKit } from "../../tests/vm/fixtures/kit.ts";
import { PROBE_LAUNCH } from "../../tests/vm/fixtures/guest.ts";

const quick = process.argv.includes("--quick");
const only = process.argv.find((a) => a.startsWith("--only="))?.slice("--only=".length);
const reps = Number(process.argv.find((a) => a.startsWith("--reps="))?.slice("--reps=".length) ?? "1");

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}
const MiB = 1024 * 1024;

function scenario(commands: string): Scenario {
  return {
    steps: [
      { action: "start", after: { kind: "none" } },
      { action: "write-stdin", data: Buffer.from(commands), offset: 0, after: { kind: "output", stream: "stdout", contains: "ready" } },
      { action: "close-stdin", after: { kind: "event", event: "input-accepted" } },
    ],
    expect: [{ invocation: 1, exitCode: 0 }],
    limits: { ...DEFAULT_RUN_LIMITS, outputBytes: 64 * MiB },
  };
}

async function measure(payloadBytes: number, commands: string) {
  const kit = await testKit();
  const probe = probeBytes("static");
  const payload = randomBytes(payloadBytes);
  const blobs = new Map<string, Buffer>([
    [sha256(probe), probe],
    [sha256(payload), payload],
  ]);
  const e = (x: FsEntry) => [x.path, x] as const;
  const tree = new Map<string, FsEntry>([
    e({ type: "dir", path: "/", mode: 0o755, uid: 0, gid: 0, mtime: 0 }),
    e({ type: "dir", path: "/bin", mode: 0o755, uid: 0, gid: 0, mtime: 0 }),
    e({ type: "file", path: "/bin/probe", mode: 0o755, uid: 0, gid: 0, mtime: 0, size: probe.length, sha256: sha256(probe) }),
    e({ type: "dir", path: "/home", mode: 0o755, uid: 0, gid: 0, mtime: 0 }),
    e({ type: "dir", path: "/home/u", mode: 0o755, uid: 1000, gid: 1000, mtime: 0 }),
    e({ type: "file", path: "/payload", mode: 0o644, uid: 0, gid: 0, mtime: 0, size: payload.length, sha256: sha256(payload) }),
  ]);
  const sc = scenario(commands);
  const t0 = performance.now();
  const p = await prepareGuest(
    { tree, content: { get: async (d: Sha256Digest) => blobs.get(d)! }, launch: PROBE_LAUNCH, scenario: sc },
    { kit, qemu: qemuVersion() },
  );
  const imageMs = performance.now() - t0;
  const dir = mkdtempSync(join(tmpdir(), "cairn-bench-"));
  const rrfile = join(dir, "replay.log");
  const results: Record<string, { ms: number; outcome: string; events: string; protocol: number }> = {};
  const times: Record<string, number[]> = { none: [], record: [], replay: [] };
  // QEMU's CPU time (user + system, from this process's reaped children): steadier than wall time on a loaded machine
  const cpu: Record<string, number[]> = { none: [], record: [], replay: [] };
  const seen = new Set<string>();
  for (let rep = 0; rep < reps; rep++) {
    // interleaved, so load on the shared machine hits all three modes alike
    for (const mode of ["none", "record", "replay"] as const) {
      const cpuBefore = childrenCpuMs() ?? 0;
      const b = await bootGuest(p, mode, { dir, rrfile }, 600_000);
      cpu[mode]!.push((childrenCpuMs() ?? 0) - cpuBefore);
      const ev = evaluate(b.decoded, sc, b.kernel);
      times[mode]!.push(b.qemu.durationMs);
      seen.add(canonicalize(ev.events));
      results[mode] = { ms: 0, outcome: ev.outcome, events: canonicalize(ev.events), protocol: b.protocolBytes.length };
    }
  }
  for (const mode of ["none", "record", "replay"]) results[mode]!.ms = median(times[mode]!);
  const log = statSync(rrfile).size;
  // one per return of QEMU's vCPU loop with icount sleep=on: what a replay pays for (docs/runs.md, "Replay speed of sleep=on runs")
  const warps = replayLogEvents(readFileSync(rrfile))?.get("checkpoint-clock-warp-account") ?? 0;
  rmSync(dir, { recursive: true, force: true });
  const diverged = seen.size !== 1;
  return {
    payloadMiB: payloadBytes / MiB,
    root: p.vm.root_disk === null ? "initramfs" : "disk",
    sleep: p.vm.icount_sleep ? "on" : "off",
    warps,
    imageMiB: (p.image.size + (p.vm.root_disk?.size ?? 0)) / MiB,
    imageMs,
    plainS: results.none!.ms / 1000,
    recordS: results.record!.ms / 1000,
    replayS: results.replay!.ms / 1000,
    recordOverPlain: results.record!.ms / results.none!.ms,
    replayOverRecord: results.replay!.ms / results.record!.ms,
    recordCpuS: median(cpu.record!) / 1000,
    replayCpuS: median(cpu.replay!) / 1000,
    replayLogKiB: log / 1024,
    protocolKiB: results.record!.protocol / 1024,
    diverged,
  };
}

async function assemblyFigures() {
  const dir = mkdtempSync(join(tmpdir(), "cairn-bench-asm-"));
  writeFileSync(join(dir, "probe"), readFileSync(probePath("static")));
  writeFileSync(join(dir, "spec.json"), JSON.stringify({ schema: "cairn.workload/1", source: { binary: { path: "probe", user: "1000:1000" } } }));
  const r = await assembleWorkload({ specPath: join(dir, "spec.json"), storeDir: join(dir, "store"), lockOut: join(dir, "lock.json"), cairnVersion: "bench" });
  rmSync(dir, { recursive: true, force: true });
  return { assemblyMs: r.durationMs, treeKiB: r.treeBytes / 1024, rawKiB: r.rawBytes / 1024 };
}

const rows: Awaited<ReturnType<typeof measure>>[] = [];
const cases: Array<[number, string, string]> = quick
  ? [[0, "echo x\nexit 0\n", "tiny"]]
  : [
      [0, "echo x\nexit 0\n", "tiny workload"],
      [16 * MiB, "echo x\nexit 0\n", "+16 MiB file"],
      [64 * MiB, "echo x\nexit 0\n", "+64 MiB file"],
      [0, "flood 262144\nexit 0\n", "256 KiB output"],
      [0, "flood 1048576\nexit 0\n", "1 MiB output"],
    ];
const asm = await assemblyFigures();
console.log(
  `assembly of the static probe as a binary spec: ${asm.assemblyMs} ms, tree ${asm.treeKiB.toFixed(0)} KiB, raw closure ${asm.rawKiB.toFixed(0)} KiB`,
);
console.log(`${reps} repetition(s) per mode, medians; QEMU ${qemuVersion()}`);
console.log(
  "| case | root, icount sleep | image MiB | image build ms | plain s | record s | replay s | record/plain | replay/record | record CPU s | replay CPU s | replay/record CPU | replay log KiB | clock-warp-account checkpoints | protocol KiB | divergence |",
);
console.log("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
for (const [payload, commands, label] of cases.filter((c) => only === undefined || c[2].includes(only))) {
  const r = await measure(payload, commands);
  rows.push(r);
  console.log(
    `| ${label} | ${r.root}, ${r.sleep} | ${r.imageMiB.toFixed(1)} | ${r.imageMs.toFixed(0)} | ${r.plainS.toFixed(1)} | ${r.recordS.toFixed(1)} | ${r.replayS.toFixed(1)} | ${r.recordOverPlain.toFixed(2)} | ${r.replayOverRecord.toFixed(2)} | ${r.recordCpuS.toFixed(1)} | ${r.replayCpuS.toFixed(1)} | ${(r.replayCpuS / r.recordCpuS).toFixed(2)} | ${r.replayLogKiB.toFixed(0)} | ${r.warps} | ${r.protocolKiB.toFixed(1)} | ${r.diverged ? "DIVERGED" : "none"} |`,
  );
}
