/**
 * The disk-backed guest root (issue 9, item 1): the workload template on a
 * read-only EROFS disk that cairn writes from the canonical tree, attached
 * through QEMU's blkreplay driver, overlaid by a fresh tmpfs per start.
 *   - a spec with `run.root: disk` records, and replays twice with the same
 *     events and outcome; the VM identity names the disk (digest, size,
 *     device) and icount sleep=on; an edited disk size is refused before launch;
 *     its replay log holds no flood of clock checkpoints from the kernel's
 *     boot-time busy waits (what made sleep=on replays 3x slower than their record);
 *   - the guest checks the mounted disk against the tree manifest and the
 *     workload sees the tree; a file written in one start (copied up from
 *     the disk into the upper layer) is gone in the next start;
 *   - a tree of more than 64 MiB goes on a disk by default and runs in
 *     256 MiB of guest RAM, where the same tree in an initramfs fails to
 *     unpack (tests/vm/guest-proof.test.ts).
 */
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { CairnError } from "../../src/core/index.ts";
import { DEFAULT_RUN_LIMITS, recordRun, replayRun, ROOT_DISK_DEVICE, vmDigest, type Scenario } from "../../src/vm/index.ts";
import { replayLogEvents } from "../../src/vm/replay-log.ts";
import { bigWorld, bootProbe } from "./fixtures/guest.ts";
import { testKit, VM_SKIP } from "./fixtures/kit.ts";
import { probePath } from "./fixtures/programs.ts";

const restart = (first: string, second: string): Scenario => ({
  steps: [
    { action: "start", after: { kind: "none" } },
    { action: "write-stdin", offset: 0, data: Buffer.from(first), after: { kind: "output", stream: "stdout", contains: "ready" } },
    { action: "close-stdin", after: { kind: "event", event: "input-accepted" } },
    { action: "start", after: { kind: "event", event: "cleanup-complete" } },
    { action: "write-stdin", offset: 0, data: Buffer.from(second), after: { kind: "output", stream: "stdout", contains: "ready" } },
    { action: "close-stdin", after: { kind: "event", event: "input-accepted" } },
  ],
  expect: [
    { invocation: 1, exitCode: 0 },
    { invocation: 2, exitCode: 0 },
  ],
  limits: DEFAULT_RUN_LIMITS,
});

describe("the disk-backed guest root", { skip: VM_SKIP }, () => {
  it("the guest sees the tree on the disk, and a start never sees what the previous one wrote", async () => {
    const b = await bootProbe({ ...restart("ls /\nwrite /home/u/new\nstat /home/u/new\nexit 0\n", "stat /home/u/new\nls /home\nexit 0\n"), root: "disk" });
    assert.equal(b.evaluation.status, "passed", JSON.stringify(b.evaluation.events));
    assert.ok(b.prepared.vm.root_disk !== null && b.prepared.vm.icount_sleep);
    const first = b.stdout(1);
    for (const line of ["entry /bin/probe file 0755 0 0 1001", "entry /home/u dir 0755 1000 1000 1002 -", "entry /tmp dir 1777 0 0 0 -", "wrote /home/u/new"]) {
      assert.ok(
        first.some((l) => l.startsWith(line)),
        `${line}\n${first.join("\n")}`,
      );
    }
    const second = b.stdout(2);
    assert.ok(second.includes("absent /home/u/new"), second.join("\n"));
    assert.ok(
      second.some((l) => l.startsWith("entry /home/u dir 0755 1000 1000 1002")),
      "the disk's own entries are there again, unchanged",
    );
    assert.deepEqual(b.evaluation.kernel, []);
  });

  it("a spec with run.root: disk records, replays twice identically, and an edited disk is refused before launch", async () => {
    const kit = await testKit();
    const root = mkdtempSync(join(tmpdir(), "cairn-disk-"));
    cpSync(probePath("static"), join(root, "probe"));
    const spec = {
      schema: "cairn.workload/1",
      source: { binary: { path: "probe", user: "1000:1000" } },
      run: {
        root: "disk",
        steps: [
          { action: "start" },
          { action: "write-stdin", data: "ls /\nexit 0\n", after: { output: "stdout", contains: "ready" } },
          { action: "close-stdin", after: { event: "input-accepted" } },
        ],
        expect: [{ "exit-code": 0, "stdout-includes": ["ls done"] }],
      },
    };
    writeFileSync(join(root, "spec.json"), JSON.stringify(spec));
    const storeDir = join(root, "store");
    const rec = await recordRun({ input: join(root, "spec.json"), storeDir, runsDir: join(root, "runs"), kit, cairnVersion: "test" });
    assert.equal(rec.manifest.status, "passed");
    const disk = rec.manifest.vm.root_disk;
    assert.ok(disk !== null);
    assert.equal(disk.filesystem, "erofs");
    assert.equal(disk.device, ROOT_DISK_DEVICE);
    assert.equal(disk.size % 4096, 0);
    assert.equal(rec.manifest.vm.icount_sleep, true);
    assert.ok(rec.manifest.vm.kernel_modules.some((m) => m.startsWith("erofs=")));
    // replay speed (docs/runs.md, "Replay speed of sleep=on runs"): the kernel's boot-time busy waits wrote a
    // clock-warp-account checkpoint per PAUSE, about 1.5 million of them, which made the replay ~3x slower than its record
    const events = replayLogEvents(readFileSync(join(rec.runDir, "replay.log")));
    assert.ok(events !== undefined, "the log is framed");
    const warps = events.get("checkpoint-clock-warp-account") ?? 0;
    assert.ok(warps > 0 && warps < 500_000, `${warps} clock-warp-account checkpoints`);
    for (let i = 0; i < 2; i++) {
      const r = await replayRun({ runDir: rec.runDir, storeDir, kit });
      assert.equal(r.evaluation.outcome, rec.manifest.outcome);
      assert.deepEqual(r.evaluation.events, rec.evaluation.events);
    }
    const file = join(rec.runDir, "run.json");
    const m = JSON.parse(readFileSync(file, "utf8"));
    m.vm.root_disk.size += 4096;
    m.vm_digest = vmDigest(m.vm);
    writeFileSync(file, JSON.stringify(m));
    await assert.rejects(
      () => replayRun({ runDir: rec.runDir, storeDir, kit }),
      (e: unknown) => e instanceof CairnError && e.code === "VM_MISMATCH" && e.path === "/vm/root_disk",
    );
  });

  it("a tree of more than 64 MiB goes on a disk by default and runs in 256 MiB of guest RAM", async () => {
    const world = bigWorld(97);
    const b = await bootProbe(restart("stat /zz-marker\nexit 0\n", "exit 0\n"), undefined, world);
    assert.ok(b.prepared.vm.root_disk !== null, "the default put the tree on a disk");
    assert.equal(b.prepared.vm.memory_mib, 256);
    assert.equal(b.evaluation.status, "passed", JSON.stringify(b.evaluation.events));
    assert.ok(
      b.stdout(1).some((l) => l.startsWith("entry /zz-marker file 0644")),
      b.stdout(1).join("\n"),
    );
    assert.deepEqual(b.evaluation.kernel, []);
  });
});
