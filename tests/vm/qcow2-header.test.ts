/**
 * A run's qcow2 files stand alone (src/vm/qcow2-header.ts): the header of a
 * qcow2 naming a backing file or an external data file (both host paths
 * QEMU and qemu-img would open), of another format or version, is refused;
 * a qcow2 as `qemu-img create` makes it (versions 2 and 3) passes. Images are
 * made by Debian's qemu-img, the independent writer. Through replay, import
 * and branch: tests/vm/branch-bundle.test.ts.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { CairnError } from "../../src/core/index.ts";
import { checkStandaloneQcow2, qcow2Header, qcow2NotStandalone } from "../../src/vm/qcow2-header.ts";

const QEMU_IMG = (() => {
  try {
    execFileSync("qemu-img", ["--version"], { stdio: "ignore" });
    return undefined;
  } catch {
    return "qemu-img (Debian's qemu-utils) is not installed";
  }
})();

describe("a run's qcow2 stands alone", { skip: QEMU_IMG }, () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-qcow2-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const img = (name: string, ...args: string[]): string => {
    const f = join(dir, name);
    execFileSync("qemu-img", ["create", "-q", "-f", "qcow2", ...args, f, "1M"]);
    return f;
  };

  it("refuses a backing file, an external data file, another format or version; passes what qemu-img create makes (controls)", () => {
    writeFileSync(join(dir, "host.raw"), Buffer.alloc(1024 * 1024));
    assert.equal(qcow2NotStandalone(qcow2Header(img("v3.qcow2"))), undefined);
    assert.equal(qcow2NotStandalone(qcow2Header(img("v2.qcow2", "-o", "compat=0.10"))), undefined);
    const backing = img("backing.qcow2", "-b", join(dir, "host.raw"), "-F", "raw");
    assert.match(qcow2NotStandalone(qcow2Header(backing)) ?? "", /backing file/);
    const data = img("data.qcow2", "-o", `data_file=${join(dir, "data.raw")}`);
    assert.match(qcow2NotStandalone(qcow2Header(data)) ?? "", /external file/);
    assert.match(qcow2NotStandalone(readFileSync(join(dir, "host.raw"))) ?? "", /not a qcow2/);
    const v4 = Buffer.from(qcow2Header(img("v4.qcow2")));
    v4.writeUInt32BE(4, 4);
    assert.match(qcow2NotStandalone(v4) ?? "", /version 4/);
    assert.match(qcow2NotStandalone(Buffer.from("QFI\xfb", "latin1")) ?? "", /not a qcow2/, "a header cut short");
    assert.throws(
      () => checkStandaloneQcow2(backing, "/branch/start", "branch-start.qcow2"),
      (e: unknown) => e instanceof CairnError && e.code === "RUN_INVALID" && e.path === "/branch/start" && /backing file/.test(e.message),
    );
    checkStandaloneQcow2(join(dir, "v3.qcow2"), "/branch/start", "branch-start.qcow2");
    // a FIFO or a symlink in its place is never read through (the callers check the file first; this holds alone)
    execFileSync("mkfifo", [join(dir, "fifo")]);
    assert.match(qcow2NotStandalone(qcow2Header(join(dir, "fifo"))) ?? "", /not a qcow2/);
    symlinkSync(join(dir, "v3.qcow2"), join(dir, "link.qcow2"));
    assert.match(qcow2NotStandalone(qcow2Header(join(dir, "link.qcow2"))) ?? "", /not a qcow2/);
  });
});
