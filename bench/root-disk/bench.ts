/**
 * Guest roots by image size (issue 9, item 1): the same tree booted with
 * its template in the initramfs and on a read-only EROFS root disk.
 *
 *   node --import tsx bench/root-disk/bench.ts [--sizes=64,256,1020] [--roots=initramfs,disk]
 *
 * For each tree size (MiB of incompressible files, 64 MiB each, the last one
 * `/var/zz-last`, last in write order) and root:
 *   - image: host time to build the guest image(s) (prepareGuest: the cpio,
 *     or the EROFS image hashed once), and their sizes;
 *   - first: wall time of a plain boot whose workload exits at once: boot,
 *     mount, the tree check and one start, i.e. the time to the workload's
 *     first instruction and back;
 *   - record and replay of a workload that prints the SHA-256 of the last
 *     file, with the replay log's size; the printed digest is checked
 *     against the host's and the replay's events against the record's;
 *   - ratio: `first` over the same for a tiny tree (the probe alone, in the
 *     initramfs, as the bundled hello runs). Goal from the issue: ≤ 1.5 at 1 GiB.
 * Guest RAM is the default for the root (the initramfs: sized from the image).
 * The machine is shared: single timings are noisy; sizes are exact.
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { canonicalize, sha256, type Sha256Digest } from "../../src/core/index.ts";
import type { FsEntry } from "../../src/tree/entries.ts";
import { bootGuest, DEFAULT_RUN_LIMITS, evaluate, prepareGuest, qemuVersion, type GuestLaunch, type GuestRoot, type Scenario } from "../../src/vm/index.ts";
import { replayLogEvents } from "../../src/vm/replay-log.ts";
import { childrenCpuMs } from "../../src/vm/run-facts.ts";
import { testKit } from "../../tests/vm/fixtures/kit.ts";

const MiB = 1024 * 1024;
const arg = (name: string, dflt: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? dflt;
// 1020 MiB: with the guest's own files the image stays within run.limits.image-bytes' 1 GiB ceiling
const sizes = arg("sizes", "64,256,1020").split(",").map(Number);
const roots = arg("roots", "initramfs,disk").split(",") as GuestRoot[];

function buildHash(): Buffer {
  const dir = mkdtempSync(join(tmpdir(), "cairn-bench-hash-"));
  const out = join(dir, "hash");
  const r = spawnSync("gcc", ["-static", "-O2", "-o", out, join(import.meta.dirname, "hash.c"), join(import.meta.dirname, "../../agent/sha256.c")], {
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`gcc failed: ${r.stderr}`);
  const bytes = readFileSync(out);
  rmSync(dir, { recursive: true, force: true });
  return bytes;
}

function world(hash: Buffer, mib: number) {
  const blobs = new Map<string, Buffer>([[sha256(hash), hash]]);
  const e = (x: FsEntry) => [x.path, x] as const;
  const tree = new Map<string, FsEntry>([
    e({ type: "dir", path: "/", mode: 0o755, uid: 0, gid: 0, mtime: 0 }),
    e({ type: "dir", path: "/bin", mode: 0o755, uid: 0, gid: 0, mtime: 0 }),
    e({ type: "file", path: "/bin/hash", mode: 0o755, uid: 0, gid: 0, mtime: 0, size: hash.length, sha256: sha256(hash) }),
  ]);
  let last = "";
  if (mib > 0) {
    tree.set("/var", { type: "dir", path: "/var", mode: 0o755, uid: 0, gid: 0, mtime: 0 });
    for (let left = mib, i = 0; left > 0; i++) {
      const n = Math.min(64, left);
      left -= n;
      const bytes = randomBytes(n * MiB);
      const path = left === 0 ? "/var/zz-last" : `/var/blob-${String(i).padStart(3, "0")}`;
      blobs.set(sha256(bytes), bytes);
      tree.set(path, { type: "file", path, mode: 0o644, uid: 0, gid: 0, mtime: 0, size: bytes.length, sha256: sha256(bytes) });
      if (left === 0) last = sha256(bytes).slice("sha256:".length);
    }
  }
  return { tree, content: { get: async (d: Sha256Digest) => blobs.get(d)! }, last };
}

const once = (): Scenario => ({
  steps: [
    { action: "start", after: { kind: "none" } },
    { action: "close-stdin", after: { kind: "none" } },
  ],
  expect: [{ invocation: 1, exitCode: 0 }],
  limits: { ...DEFAULT_RUN_LIMITS, imageBytes: 1024 * MiB, timeMs: 600_000 },
});
const launch = (argv: string[]): GuestLaunch => ({ path: "/bin/hash", argv, env: [], workdir: "/", uid: 1000, gid: 1000 });

async function boot(w: ReturnType<typeof world>, root: GuestRoot, argv: string[], modes: Array<"none" | "record" | "replay">) {
  const kit = await testKit();
  const sc = { ...once(), root };
  const t0 = performance.now();
  const p = await prepareGuest({ tree: w.tree, content: w.content, launch: launch(argv), scenario: sc }, { kit, qemu: qemuVersion() });
  const imageMs = performance.now() - t0;
  const dir = mkdtempSync(join(tmpdir(), "cairn-bench-root-"));
  const rrfile = join(dir, "replay.log");
  const out: Record<string, { qemuS: number; cpuS: number; hostS: number; stdout: string; events: string; status: string }> = {};
  for (const mode of modes) {
    const t = performance.now();
    // QEMU's CPU time (user + system, from this process's reaped children): steadier than wall time on a loaded machine
    const cpuBefore = childrenCpuMs() ?? 0;
    const b = await bootGuest(p, mode, { dir, rrfile }, 1_800_000);
    const cpuS = ((childrenCpuMs() ?? 0) - cpuBefore) / 1000;
    const ev = evaluate(b.decoded, sc, b.kernel);
    out[mode] = {
      qemuS: b.qemu.durationMs / 1000,
      cpuS,
      hostS: (performance.now() - t - b.qemu.durationMs) / 1000,
      stdout: b.decoded.streams.get(1)?.stdout.toString("utf8") ?? "",
      events: canonicalize(ev.events),
      // an infrastructure failure names its reasons: the agent's and the kernel's
      status: [
        ev.status,
        ...ev.events.filter((e) => e.event === "infra-failure").map((e) => (e as { reason?: string }).reason),
        ...ev.kernel.map((k) => k.reason),
      ].join(" "),
    };
  }
  const log = modes.includes("record") ? statSync(rrfile).size : 0;
  // one per return of QEMU's vCPU loop with icount sleep=on: what a replay pays for (docs/runs.md, "Replay speed of sleep=on runs")
  const warps = modes.includes("record") ? (replayLogEvents(readFileSync(rrfile))?.get("checkpoint-clock-warp-account") ?? 0) : 0;
  rmSync(dir, { recursive: true, force: true });
  return { p, imageMs, out, log, warps };
}

const hash = buildHash();
const tiny = await boot(world(hash, 0), "initramfs", ["/bin/hash"], ["none"]);
const tinyS = tiny.out.none!.qemuS;
console.log(`tiny tree (the probe alone, initramfs): first ${tinyS.toFixed(1)} s`);
console.log(
  "| tree | root | image | image build | guest RAM | first (ratio to tiny) | record | replay | replay/record | replay/record CPU | replay log | clock-warp-account checkpoints | digest | replay = record |",
);
console.log("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
for (const mib of sizes) {
  const w = world(hash, mib);
  for (const root of roots) {
    try {
      const first = await boot(w, root, ["/bin/hash"], ["none"]);
      const rr = await boot(w, root, ["/bin/hash", "/var/zz-last"], ["record", "replay"]);
      const rec = rr.out.record!;
      const rep = rr.out.replay!;
      const disk = first.p.vm.root_disk;
      const imageMiB = (first.p.image.size + (disk?.size ?? 0)) / MiB;
      const printed = rec.stdout.split(" ")[0] === w.last ? "ok" : `WRONG (${rec.stdout.trim()})`;
      console.log(
        `| ${mib} MiB | ${root} | ${imageMiB.toFixed(1)} MiB | ${(first.imageMs / 1000).toFixed(1)} s | ${first.p.vm.memory_mib} MiB | ${first.out.none!.qemuS.toFixed(1)} s (${(first.out.none!.qemuS / tinyS).toFixed(2)}×, ${first.out.none!.status}) | ${rec.qemuS.toFixed(1)} s (${rec.status}) | ${rep.qemuS.toFixed(1)} s | ${(rep.qemuS / rec.qemuS).toFixed(2)} | ${(rep.cpuS / rec.cpuS).toFixed(2)} (${rec.cpuS.toFixed(1)} s, ${rep.cpuS.toFixed(1)} s) | ${(rr.log / MiB).toFixed(2)} MiB | ${rr.warps} | ${printed} | ${rec.events === rep.events ? "yes" : "NO"} |`,
      );
      if (disk) console.log(`  (host time to write the disk per boot: ${first.out.none!.hostS.toFixed(1)} s)`);
    } catch (e) {
      console.log(`| ${mib} MiB | ${root} | refused or failed: ${(e as Error).message.slice(0, 160)} |`);
    }
  }
}
