/**
 * Which guest console lines end a run (src/vm/kernel-log.ts): each reason
 * from a line as the Debian 6.1 kernel prints it, and controls — a quiet
 * boot's lines and the agent's own diagnostics — that match nothing.
 */
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { consoleFailures, kernelFailures } from "../../src/vm/index.ts";

describe("kernel-reported failures", () => {
  it("names each reason from the kernel's own line, timestamp stripped", () => {
    const text = [
      "[    4.544745] Initramfs unpacking failed: write error",
      "[   12.000001] Out of memory: Killed process 77 (oom) total-vm:250000kB, anon-rss:200000kB",
      "[   13.1] blk_update_request: I/O error, dev vda, sector 2048 op 0x0:(READ)",
      "[   13.2] EXT4-fs error (device vda): ext4_lookup:1785: inode #2: comm x: deleted inode referenced: 12",
      "[   14.0] Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000009",
    ].join("\n");
    assert.deepEqual(kernelFailures(text), [
      { reason: "initramfs-unpack", line: "Initramfs unpacking failed: write error" },
      { reason: "oom-kill", line: "Out of memory: Killed process 77 (oom) total-vm:250000kB, anon-rss:200000kB" },
      { reason: "io-error", line: "blk_update_request: I/O error, dev vda, sector 2048 op 0x0:(READ)" },
      { reason: "fs-error", line: "EXT4-fs error (device vda): ext4_lookup:1785: inode #2: comm x: deleted inode referenced: 12" },
      { reason: "panic", line: "Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000009" },
    ]);
  });

  it("control: a quiet boot and the agent's diagnostics are no failure", () => {
    const text = [
      "[    0.000000] Linux version 6.1.0-57-cloud-amd64",
      "[    1.2] Freeing unused kernel image (initmem) memory: 2000K",
      "cairn-agent: must run as PID 1 of the run VM",
      "[    2.0] virtio_console virtio0: Error allocating inbufs",
    ].join("\n");
    assert.deepEqual(kernelFailures(text), []);
  });

  it("bounds what it keeps: lines cut to 200 printable characters, at most 16 failures", () => {
    const long = `Out of memory: Killed process 1 (${"x".repeat(500)}\u0007)`;
    const got = kernelFailures(Array(40).fill(long).join("\n"));
    assert.equal(got.length, 16);
    assert.equal(got[0]!.line.length, 200);
    assert.match(got[0]!.line, /^[\x20-\x7e]+$/);
  });

  it("reads the console log file; no file is no failure", () => {
    const dir = mkdtempSync(join(tmpdir(), "cairn-console-"));
    assert.deepEqual(consoleFailures(join(dir, "absent.log")), []);
    writeFileSync(join(dir, "console.log"), "[ 1.0] Initramfs unpacking failed: write error\n");
    assert.deepEqual(
      consoleFailures(join(dir, "console.log")).map((k) => k.reason),
      ["initramfs-unpack"],
    );
  });
});
