/**
 * A bundle is built in memory, bounded by `bundle.max_bytes` (4 GiB). A run
 * of a big image (issue 31, case 15: images of 5–15 GB now run from a root
 * disk) used to have every store object of its workload read whole into
 * memory before the bound was checked: a layer past Node's largest buffer
 * failed as a RangeError, one below it cost its size in RAM, twice (the
 * tar). The sizes the lock records are now summed first. Here a recorded
 * run's lock is rewritten (with a valid lock_digest) to say its executable
 * is 5 GiB: the bundle is refused naming `bundle.max_bytes` before the
 * object is read (the object itself is a few hundred KiB, so a read would
 * fail otherwise, as STORE_CORRUPT or SIZE_MISMATCH); control: the run as
 * recorded bundles.
 */
import assert from "node:assert/strict";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { CairnError } from "../../src/core/index.ts";
import { recordRun, writeRunBundle } from "../../src/vm/index.ts";
import { encodeWorkloadLock, parseWorkloadLock } from "../../src/workload/index.ts";
import { testKit, VM_SKIP } from "./fixtures/kit.ts";
import { binaryWorkspace } from "./fixtures/workloads.ts";

const GiB = 1024 ** 3;

describe("cairn bundle of a run whose workload is larger than bundle.max_bytes", { skip: VM_SKIP }, () => {
  const work = mkdtempSync(join(tmpdir(), "cairn-bundle-size-"));
  after(() => rmSync(work, { recursive: true, force: true }));

  it("is refused naming bundle.max_bytes before any object is read (control: the run as recorded bundles)", async () => {
    const kit = await testKit();
    const ws = binaryWorkspace();
    const r = await recordRun({ input: ws.specPath, storeDir: ws.storeDir, runsDir: ws.runsDir, kit, cairnVersion: "test" });
    const control = writeRunBundle({ runDir: r.runDir, storeDir: ws.storeDir, kit, out: join(work, "control.cairn") });
    assert.ok(control.size > 0 && existsSync(control.file));

    const big = join(work, "big-run");
    cpSync(r.runDir, big, { recursive: true });
    const lockPath = join(big, "lock.json"); // RUN_FILES.lock
    const lock = parseWorkloadLock(readFileSync(lockPath), lockPath);
    const raw = lock.raw.map((x, i) => (i === 0 ? { ...x, size: 5 * GiB } : x));
    writeFileSync(lockPath, encodeWorkloadLock({ ...lock, raw }));
    const out = join(work, "big.cairn");
    let e: unknown;
    try {
      writeRunBundle({ runDir: big, storeDir: ws.storeDir, kit, out });
    } catch (x) {
      e = x;
    }
    assert.ok(e instanceof CairnError, String(e));
    assert.equal(e.code, "LIMIT_EXCEEDED", e.message);
    assert.match(e.message, /bundle\.max_bytes/);
    assert.equal(e.path, out);
    assert.equal(existsSync(out), false, "nothing written");
    rmSync(ws.root, { recursive: true, force: true });
  });
});
