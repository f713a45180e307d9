/**
 * A full disk during `cairn run` is reported as what it is (issue 16). The
 * runs directory is a small tmpfs, mounted in a user and mount namespace of
 * the test's own (`unshare -rm`, no root needed), sized from a control run:
 *
 * - room for the guest image but not for the replay log: QEMU does not
 *   report its failed writes, and the run used to end as "protocol stream
 *   invalid ... the guest agent or the transport misbehaved"
 *   (RUN_INFRASTRUCTURE); it is now IO_ERROR naming the full file system
 *   (run.min_free_bytes), and the failure bundle that cannot be written
 *   does not replace it;
 * - no room for the guest image: IO_ERROR naming the image (ENOSPC);
 * - control: with room the same run passes.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import { needs } from "../helpers/prerequisites.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { TEST_KIT_DIR, testKit, VM_SKIP } from "./fixtures/kit.ts";
import { binaryWorkspace } from "./fixtures/workloads.ts";

const probe = spawnSync("unshare", ["-rm", "sh", "-c", 'd=$(mktemp -d) && mount -t tmpfs -o size=64k none "$d"'], { encoding: "utf8" });
const NS_SKIP = needs(probe.status === 0 ? undefined : `unshare -rm with a tmpfs mount (user namespaces): ${probe.stderr.trim().slice(0, 120)}`);
const SKIP = VM_SKIP || NS_SKIP;

/** `cairn run` (the built CLI) with its runs directory on a fresh tmpfs of `kib` KiB. */
function runOnTmpfs(specPath: string, storeDir: string, runs: string, kib: number): { code: number | null; doc: Record<string, unknown>; stderr: string } {
  mkdirSync(runs);
  const r = spawnSync(
    "unshare",
    [
      "-rm",
      "sh",
      "-c",
      `mount -t tmpfs -o size=${kib}k,mode=0700 none "$0" && exec "$@"`,
      runs,
      process.execPath,
      join(PROJECT_ROOT, "bin", "cairn.js"),
      "run",
      specPath,
      "--store",
      storeDir,
      "--runs",
      runs,
      "--kit",
      TEST_KIT_DIR,
      "--json",
    ],
    { encoding: "utf8", timeout: 600_000 },
  );
  return { code: r.status, doc: JSON.parse(r.stdout) as Record<string, unknown>, stderr: r.stderr };
}

describe("a full disk during cairn run", { skip: SKIP }, () => {
  let ws: ReturnType<typeof binaryWorkspace>;
  let imageKiB: number;

  before(async () => {
    await testKit();
    ws = binaryWorkspace();
  });

  it("control: with room (64 MiB) the run passes; the guest image's size sizes the cases below", () => {
    const r = runOnTmpfs(ws.specPath, ws.storeDir, join(ws.root, "runs-roomy"), 64 * 1024);
    assert.equal(r.code, 0, JSON.stringify(r.doc));
    assert.equal(r.doc.status, "passed");
    const m = /guest image (\d+) bytes/.exec(r.stderr);
    assert.ok(m, r.stderr);
    imageKiB = Math.ceil(Number(m[1]) / 1024);
  });

  it("room for the image but not the replay log: IO_ERROR naming the full file system, not a protocol error", () => {
    assert.ok(imageKiB > 0, "the control ran first");
    const runs = join(ws.root, "runs-log");
    const r = runOnTmpfs(ws.specPath, ws.storeDir, runs, imageKiB + 24);
    assert.equal(r.code, 1);
    const error = r.doc.error as { code: string; message: string; path: string };
    assert.equal(error.code, "IO_ERROR", JSON.stringify(error));
    assert.match(error.message, /is full .*run\.min_free_bytes/);
    assert.ok(error.path.startsWith(runs), error.path);
  });

  it("no room for the guest image: IO_ERROR naming the image (ENOSPC)", () => {
    const r = runOnTmpfs(ws.specPath, ws.storeDir, join(ws.root, "runs-tiny"), 64);
    assert.equal(r.code, 1);
    const error = r.doc.error as { code: string; message: string };
    assert.equal(error.code, "IO_ERROR", JSON.stringify(error));
    assert.match(error.message, /initramfs\.img|is full/);
  });
});
