import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readFileBounded } from "../../src/core/index.ts";
import { setBoundedReadHook } from "../../src/core/bounded-read.ts";
import { assertCode } from "../helpers/errors.ts";
import { HANG_GUARD_MS } from "../helpers/in-child.ts";

const tempDir = (): string => mkdtempSync(join(tmpdir(), "cairn-bounded-read-"));

test("bounded read: a symlink and a directory are refused with the caller's code; a control reads", () => {
  const dir = tempDir();
  writeFileSync(join(dir, "f"), "0123456789");
  symlinkSync(join(dir, "f"), join(dir, "link"));
  mkdirSync(join(dir, "d"));
  assert.equal(readFileBounded(join(dir, "f"), 10, "test.bytes", { notRegular: "SOURCE_NOT_REGULAR" }).toString(), "0123456789", "control");
  assertCode(() => readFileBounded(join(dir, "link"), 100, "test.bytes"), "IO_ERROR");
  assertCode(() => readFileBounded(join(dir, "link"), 100, "test.bytes", { notRegular: "SOURCE_NOT_REGULAR" }), "SOURCE_NOT_REGULAR");
  assertCode(() => readFileBounded(join(dir, "d"), 100, "test.bytes", { notRegular: "REGISTRY_INVALID" }), "REGISTRY_INVALID");
  assertCode(() => readFileBounded("/dev/null", 100, "test.bytes", { notRegular: "STORE_CORRUPT" }), "STORE_CORRUPT");
});

test("bounded read: a missing file is IO_ERROR, or the caller's code; the limit is named and checked before reading", () => {
  const dir = tempDir();
  writeFileSync(join(dir, "f"), "0123456789");
  assertCode(() => readFileBounded(join(dir, "nope"), 100, "test.bytes"), "IO_ERROR");
  assertCode(() => readFileBounded(join(dir, "nope"), 100, "test.bytes", { missing: "STORE_MISSING" }), "STORE_MISSING");
  assert.equal(readFileBounded(join(dir, "f"), 10, "test.bytes").length, 10, "control: exactly at the limit");
  const e = assertCode(() => readFileBounded(join(dir, "f"), 9, "test.bytes", { limitHint: "a hint" }), "LIMIT_EXCEEDED");
  assert.match(e.message, /test\.bytes/);
  assert.equal(e.hint, "a hint");
  const o = assertCode(() => readFileBounded(join(dir, "f"), 9, "test.bytes", { oversized: "SOURCE_OVERSIZED" }), "SOURCE_OVERSIZED");
  assert.match(o.message, /test\.bytes/);
});

test("bounded read: a FIFO is refused without blocking the reader (in a child with a timeout); a control reads", () => {
  const dir = tempDir();
  const fifo = join(dir, "p");
  execFileSync("mkfifo", [fifo]);
  writeFileSync(join(dir, "f"), "x");
  // Opening a FIFO for reading without O_NONBLOCK blocks the thread: in-process, a regression could only hang, never fail.
  const probe = (p: string): string => {
    const code = `import(${JSON.stringify(new URL("../../src/core/index.ts", import.meta.url).href)}).then((m) => { try { m.readFileBounded(${JSON.stringify(p)}, 1024, "x", { notRegular: "SOURCE_NOT_REGULAR" }); console.log("read"); } catch (e) { console.log(e.code); } });`;
    const r = spawnSync(process.execPath, ["--import", "tsx", "-e", code], { timeout: HANG_GUARD_MS, encoding: "utf8" });
    return r.error !== undefined || r.signal !== null ? "hung" : r.stdout.trim();
  };
  assert.equal(probe(join(dir, "f")), "read", "control: a regular file is read");
  assert.equal(probe(fifo), "SOURCE_NOT_REGULAR");
});

test("bounded read: a file with more bytes than fstat reported (it grew) is refused as changed, not truncated; control: an empty file", () => {
  // /proc files are regular files whose fstat size is 0 but which yield bytes: the same as a file that grew between fstat and read.
  const dir = tempDir();
  writeFileSync(join(dir, "empty"), "");
  assert.equal(readFileBounded(join(dir, "empty"), 100, "test.bytes").length, 0, "control");
  assertCode(() => readFileBounded("/proc/self/status", 1 << 20, "test.bytes"), "IO_ERROR");
  assertCode(() => readFileBounded("/proc/self/status", 1 << 20, "test.bytes", { changed: "SOURCE_CHANGED" }), "SOURCE_CHANGED");
});

test("bounded read: a size other than the one the caller saw is refused as changed; control: the same size", () => {
  const dir = tempDir();
  writeFileSync(join(dir, "f"), "12345");
  assert.equal(readFileBounded(join(dir, "f"), 100, "test.bytes", { expectedSize: 5, changed: "SOURCE_CHANGED" }).toString(), "12345");
  assertCode(() => readFileBounded(join(dir, "f"), 100, "test.bytes", { expectedSize: 4, changed: "SOURCE_CHANGED" }), "SOURCE_CHANGED");
});

test("bounded read: a file appended to while it is read is refused as changed, with and without the identity check", () => {
  const dir = tempDir();
  const f = join(dir, "grow");
  writeFileSync(f, Buffer.alloc(32 * 1024 * 1024, 1));
  assert.equal(readFileBounded(f, 1 << 30, "test.bytes", { checkIdentity: true }).length, 32 * 1024 * 1024, "control: unchanged while read");
  // A writer appends continuously; the reader must notice the growth or the changed identity.
  const child = execFileSync("sh", ["-c", `(while :; do printf x >> '${f}'; done) >/dev/null 2>&1 & echo $!`])
    .toString()
    .trim();
  try {
    for (const checkIdentity of [false, true]) {
      let sawChange = false;
      for (let i = 0; i < 50 && !sawChange; i++) {
        try {
          readFileBounded(f, 1 << 30, "test.bytes", { changed: "SOURCE_CHANGED", checkIdentity });
        } catch (err) {
          assert.equal((err as { code?: string }).code, "SOURCE_CHANGED");
          sawChange = true;
        }
      }
      assert.ok(sawChange, `a concurrently growing file must be refused (checkIdentity ${checkIdentity})`);
    }
  } finally {
    process.kill(Number(child), "SIGKILL");
  }
});

test("bounded read: a regular file shorter than fstat reported (a sysfs attribute: 4096 bytes reported) is refused as changed, never returned short; control: a real file of that content", () => {
  const attr = "/sys/devices/system/cpu/online";
  const dir = tempDir();
  writeFileSync(join(dir, "online"), "0-1\n");
  assert.equal(readFileBounded(join(dir, "online"), 8192, "test.bytes").toString(), "0-1\n", "control");
  assertCode(() => readFileBounded(attr, 8192, "test.bytes", { changed: "SOURCE_CHANGED" }), "SOURCE_CHANGED");
});

test("bounded read: a read that fails in the kernel (EIO from /proc/self/mem) is IO_ERROR naming the path, never a raw errno or an empty result", () => {
  const e = assertCode(() => readFileBounded("/proc/self/mem", 1 << 20, "test.bytes"), "IO_ERROR", "/proc/self/mem");
  assert.match(e.message, /EIO/);
});

test("bounded read with the identity check: a file touched, replaced by rename, removed, or gone from its path between the read and the check is refused as changed; without the check the bytes read are returned (control)", () => {
  const dir = tempDir();
  const sub = join(dir, "sub");
  const f = join(sub, "f");
  const fresh = (): void => {
    rmSync(sub, { recursive: true, force: true });
    rmSync(join(dir, "moved"), { recursive: true, force: true });
    mkdirSync(sub);
    writeFileSync(f, "12345");
  };
  const cases: Array<[string, (path: string) => void]> = [
    ["touched (mtime)", (p) => utimesSync(p, new Date(1_000_000), new Date(1_000_000))],
    [
      "replaced by rename",
      (p) => {
        writeFileSync(join(sub, "other"), "12345");
        renameSync(join(sub, "other"), p);
      },
    ],
    ["removed", (p) => unlinkSync(p)],
    // the file itself is untouched (same inode, times and size): only the path no longer leads to it
    ["gone from its path (its directory renamed away)", () => renameSync(sub, join(dir, "moved"))],
  ];
  try {
    for (const [what, hook] of cases) {
      fresh();
      setBoundedReadHook(hook);
      assertCode(() => readFileBounded(f, 100, "test.bytes", { checkIdentity: true, changed: "SOURCE_CHANGED" }), "SOURCE_CHANGED");
      fresh();
      assert.equal(readFileBounded(f, 100, "test.bytes", { changed: "SOURCE_CHANGED" }).toString(), "12345", `control (${what}): no identity check`);
    }
    setBoundedReadHook(undefined);
    fresh();
    assert.equal(readFileBounded(f, 100, "test.bytes", { checkIdentity: true }).toString(), "12345", "control: nothing happens between read and check");
  } finally {
    setBoundedReadHook(undefined);
  }
});
