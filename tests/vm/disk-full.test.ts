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
 * - no room for the guest image, or for the lock: IO_ERROR naming the file
 *   and the full file system (it said "cannot read" the store object being
 *   copied into the image), and nothing left in the runs directory: the run
 *   was staged privately and the staging removed (issue 31, case 9);
 * - control: with room the same run passes.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import { needs } from "../helpers/prerequisites.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { TEST_KIT_DIR, testKit, VM_SKIP } from "./fixtures/kit.ts";
import { binaryWorkspace } from "./fixtures/workloads.ts";

const probe = spawnSync("unshare", ["-rm", "sh", "-c", 'd=$(mktemp -d) && mount -t tmpfs -o size=64k none "$d"'], { encoding: "utf8" });
const NS_SKIP = needs(probe.status === 0 ? undefined : `unshare -rm with a tmpfs mount (user namespaces): ${probe.stderr.trim().slice(0, 120)}`);
const SKIP = VM_SKIP || NS_SKIP;

/**
 * `cairn run` (the built CLI) with its runs directory on a fresh tmpfs of
 * `kib` KiB; `left` lists what the runs directory holds afterwards (read
 * inside the namespace, where the tmpfs is mounted).
 */
function runOnTmpfs(
  specPath: string,
  storeDir: string,
  runs: string,
  kib: number,
): { code: number | null; doc: Record<string, unknown>; stderr: string; left: string[] } {
  mkdirSync(runs);
  const listing = `${runs}.left`;
  const r = spawnSync(
    "unshare",
    [
      "-rm",
      "sh",
      "-c",
      `mount -t tmpfs -o size=${kib}k,mode=0700 none "$0" || exit 99; listing=$1; shift; "$@"; rc=$?; find "$0" -mindepth 1 -printf '%P\\n' > "$listing"; exit $rc`,
      runs,
      listing,
      process.execPath,
      join(PROJECT_ROOT, "bin", "cairn.js"),
      "run",
      specPath,
      "--store",
      storeDir,
      "--runs",
      join(runs, "runs"),
      "--kit",
      TEST_KIT_DIR,
      "--json",
    ],
    { encoding: "utf8", timeout: 600_000 },
  );
  const left = readFileSync(listing, "utf8")
    .split("\n")
    .filter((l) => l !== "");
  return { code: r.status, doc: JSON.parse(r.stdout) as Record<string, unknown>, stderr: r.stderr, left };
}

/** Not recorded, so nothing left: the runs directory holds its marker only (no run directory, no staging). */
function assertNothingLeft(left: readonly string[]): void {
  assert.deepEqual([...left].sort(), ["runs", "runs/cairn-runs.json"], left.join(", "));
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
    assertNothingLeft(r.left);
  });

  it("no room for the guest image: IO_ERROR naming the image and the full file system, nothing left (issue 31, case 9)", () => {
    // 64 KiB: the image's first MiB fails; a third of the image: the write fails while a store object is copied into it,
    // which used to say "cannot read <store object> (ENOSPC)" and leave a run directory without run.json behind
    for (const kib of [64, Math.floor(imageKiB / 3)]) {
      const runs = join(ws.root, `runs-${kib}`);
      const r = runOnTmpfs(ws.specPath, ws.storeDir, runs, kib);
      assert.equal(r.code, 1);
      const error = r.doc.error as { code: string; message: string; path: string };
      assert.equal(error.code, "IO_ERROR", JSON.stringify(error));
      assert.match(error.message, /^cannot write .*initramfs\.img: the file system holding .* is full \(ENOSPC/, `${kib} KiB`);
      assert.doesNotMatch(error.message, /cannot read|store/);
      assertNothingLeft(r.left);
    }
  });

  it("no room for the workload lock: IO_ERROR naming lock.json, nothing left", () => {
    const r = runOnTmpfs(ws.specPath, ws.storeDir, join(ws.root, "runs-4"), 4);
    assert.equal(r.code, 1);
    const error = r.doc.error as { code: string; message: string };
    assert.equal(error.code, "IO_ERROR", JSON.stringify(error));
    assert.match(error.message, /lock\.json.*(ENOSPC|is full)/);
    assertNothingLeft(r.left);
  });
});
