import { test } from "node:test";
import assert from "node:assert/strict";
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { publishBytes, publishStaged, type WriteOnce } from "../../src/store/index.ts";
import { type PublishPoint, publishedIdentical, setPublishHook } from "../../src/store/publish.ts";
import { assertCode } from "../helpers/errors.ts";

const ONCE: WriteOnce = { code: "REGISTRY_INVALID", what: "layer x", hint: "publish a new version" };
const tempDir = (): string => mkdtempSync(join(tmpdir(), "cairn-publish-"));

test("content address: a complete file appears under its name with the promised mode, and replaces a corrupt one; no temporary file is left", () => {
  const dir = tempDir();
  const target = join(dir, "obj");
  assert.equal(publishBytes(target, Buffer.from("abc")), "published");
  assert.equal(readFileSync(target, "utf8"), "abc");
  assert.equal(statSync(target).mode & 0o777, 0o600);
  writeFileSync(target, "corrupt");
  assert.equal(publishBytes(target, Buffer.from("abc"), { durable: false }), "published", "a content address is repaired by rename");
  assert.equal(readFileSync(target, "utf8"), "abc");
  assert.deepEqual(readdirSync(dir), ["obj"]);
});

test("write-once: identical bytes are kept, different bytes or another size or a symlink are refused with the caller's code; control: first publication", () => {
  const dir = tempDir();
  const target = join(dir, "x.json");
  assert.equal(publishBytes(target, Buffer.from("{}\n"), { mode: 0o644, writeOnce: ONCE }), "published", "control");
  assert.equal(statSync(target).mode & 0o777, 0o644);
  assert.equal(publishBytes(target, Buffer.from("{}\n"), { mode: 0o644, writeOnce: ONCE }), "kept");
  assertCode(() => publishBytes(target, Buffer.from("[]\n"), { writeOnce: ONCE }), "REGISTRY_INVALID");
  assertCode(() => publishBytes(target, Buffer.from("{} \n"), { writeOnce: ONCE }), "REGISTRY_INVALID");
  assert.equal(readFileSync(target, "utf8"), "{}\n", "the published bytes are untouched");
  writeFileSync(join(dir, "real"), "{}\n");
  symlinkSync(join(dir, "real"), join(dir, "link.json"));
  assertCode(() => publishBytes(join(dir, "link.json"), Buffer.from("{}\n"), { writeOnce: ONCE }), "REGISTRY_INVALID");
  assert.deepEqual(readdirSync(dir).sort(), ["link.json", "real", "x.json"], "no temporary file left behind");
});

test("staged publication: the staged file must have the verified size (SIZE_MISMATCH) and is gone either way; control: the right size", () => {
  const dir = tempDir();
  writeFileSync(join(dir, "staged"), "12345");
  assert.equal(publishStaged(join(dir, "staged"), join(dir, "obj"), 5, { durable: false }), "published", "control");
  assert.equal(readFileSync(join(dir, "obj"), "utf8"), "12345");
  assert.equal(statSync(join(dir, "obj")).mode & 0o777, 0o600);
  writeFileSync(join(dir, "staged2"), "1234");
  assertCode(() => publishStaged(join(dir, "staged2"), join(dir, "obj2"), 5), "SIZE_MISMATCH");
  assert.deepEqual(readdirSync(dir), ["obj"]);
});

// Failures of the file system, each with one defect and a control beside it: the
// caller gets a typed IO_ERROR naming the target (or the refusal the cause
// carries), never a raw errno and never a silent return, and no temporary or
// staged file is left.

test("a failed rename is IO_ERROR naming the target, and the temporary file is removed; control: the same call into an existing directory", () => {
  const dir = tempDir();
  const tmp = join(dir, "staging.tmp");
  assert.equal(publishBytes(join(dir, "obj"), Buffer.from("abc"), { tmp, durable: false }), "published", "control");
  const e = assertCode(() => publishBytes(join(dir, "missing", "obj"), Buffer.from("abc"), { tmp, durable: false }), "IO_ERROR");
  assert.equal(e.path, join(dir, "missing", "obj"));
  assert.match(e.message, /ENOENT/);
  assert.deepEqual(readdirSync(dir), ["obj"], "no temporary file left");
});

test("a staged file that cannot be named is IO_ERROR, and the staged file is gone; control: the same staged file into an existing directory", () => {
  const dir = tempDir();
  writeFileSync(join(dir, "staged"), "12345");
  const e = assertCode(() => publishStaged(join(dir, "staged"), join(dir, "missing", "obj"), 5, { durable: false }), "IO_ERROR");
  assert.equal(e.path, join(dir, "missing", "obj"));
  assert.equal(existsSync(join(dir, "staged")), false, "the staged file is gone");
  writeFileSync(join(dir, "staged"), "12345");
  assert.equal(publishStaged(join(dir, "staged"), join(dir, "obj"), 5, { durable: false }), "published", "control");
});

test("write-once: a concurrent publisher that won with other bytes is refused with the caller's code; with the same bytes the file is kept (control)", () => {
  const dir = tempDir();
  const target = join(dir, "x.json");
  try {
    setPublishHook((point, t) => {
      if (point === "staged" && t === target) writeFileSync(target, "[]\n"); // the other publisher names its file first
    });
    assertCode(() => publishBytes(target, Buffer.from("{}\n"), { writeOnce: ONCE, durable: false }), "REGISTRY_INVALID");
    assert.equal(readFileSync(target, "utf8"), "[]\n", "the winner's bytes are untouched");
    rmSync(target);
    setPublishHook((point, t) => {
      if (point === "staged" && t === target) writeFileSync(target, "{}\n");
    });
    assert.equal(publishBytes(target, Buffer.from("{}\n"), { writeOnce: ONCE, durable: false }), "kept", "control");
  } finally {
    setPublishHook(undefined);
  }
  assert.deepEqual(readdirSync(dir), ["x.json"], "no temporary file left");
});

test("write-once: a link that fails for another reason than an existing name (EXDEV) is IO_ERROR with that reason; control: a temporary file on the same file system", () => {
  const other = "/dev/shm";
  const dir = tempDir();
  assert.notEqual(statSync(other).dev, statSync(dir).dev, `${other} is another file system than ${tmpdir()} here (the test needs one)`);
  const otherDir = mkdtempSync(join(other, "cairn-publish-"));
  try {
    const e = assertCode(
      () => publishBytes(join(dir, "x.json"), Buffer.from("{}\n"), { writeOnce: ONCE, tmp: join(otherDir, "x.tmp"), durable: false }),
      "IO_ERROR",
    );
    assert.match(e.message, /EXDEV/, "the error names the link's own failure, not a later lookup of the target");
    assert.deepEqual(readdirSync(otherDir), [], "the temporary file is removed");
    assert.deepEqual(readdirSync(dir), []);
    assert.equal(publishBytes(join(dir, "x.json"), Buffer.from("{}\n"), { writeOnce: ONCE, tmp: join(dir, "x.tmp"), durable: false }), "published", "control");
  } finally {
    rmSync(otherDir, { recursive: true, force: true });
  }
});

test("write-once: a target whose lookup fails (a parent that is a file) is IO_ERROR, not a raw errno; control: a real directory", () => {
  const dir = tempDir();
  writeFileSync(join(dir, "file"), "x");
  const e = assertCode(() => publishBytes(join(dir, "file", "x.json"), Buffer.from("{}\n"), { writeOnce: ONCE }), "IO_ERROR");
  assert.match(e.message, /ENOTDIR/);
  assert.equal(publishBytes(join(dir, "x.json"), Buffer.from("{}\n"), { writeOnce: ONCE, durable: false }), "published", "control");
});

// Beyond the codes: the path each refusal names, the write-once size check
// before any read, the caller's code for a file that is not what its stat
// says, no staging when the bytes are already there, and no descriptor left
// open. Written to kill StrykerJS survivors (bench/mutation/README.md).

test("a refusal names the file it is about: the staged file for SIZE_MISMATCH, the published name for a write-once refusal; control: the right bytes", () => {
  const dir = tempDir();
  writeFileSync(join(dir, "staged"), "1234");
  assertCode(() => publishStaged(join(dir, "staged"), join(dir, "obj"), 5, { durable: false }), "SIZE_MISMATCH", join(dir, "staged"));
  const target = join(dir, "x.json");
  assert.equal(publishBytes(target, Buffer.from("{}\n"), { writeOnce: ONCE, durable: false }), "published", "control");
  const e = assertCode(() => publishBytes(target, Buffer.from("[]\n"), { writeOnce: ONCE, durable: false }), "REGISTRY_INVALID", target);
  assert.equal(e.hint, ONCE.hint, "the caller's hint");
});

test("write-once: an existing file longer than the bytes is refused with the caller's code before it is read (not a read limit); control: the same length", () => {
  const dir = tempDir();
  const target = join(dir, "x.json");
  writeFileSync(target, "{}\n\n\n");
  assertCode(() => publishBytes(target, Buffer.from("{}\n"), { writeOnce: ONCE, durable: false }), "REGISTRY_INVALID", target);
  assert.equal(publishBytes(target, Buffer.from("{}\n\n\n"), { writeOnce: ONCE, durable: false }), "kept", "control");
});

test("write-once: an existing file shorter than its stat says (a sysfs attribute, 4096 bytes reported) is refused with the caller's code, not IO_ERROR; control: a real file of 4096 bytes", () => {
  const attr = "/sys/devices/system/cpu/online";
  assert.equal(statSync(attr).size, 4096, `${attr} reports 4096 bytes here (the test needs it)`);
  const data = Buffer.alloc(4096, 0x30);
  assertCode(() => publishedIdentical(attr, data, ONCE), "REGISTRY_INVALID", attr);
  const dir = tempDir();
  writeFileSync(join(dir, "real"), data);
  assert.equal(publishedIdentical(join(dir, "real"), data, ONCE), true, "control");
  assert.equal(publishedIdentical(join(dir, "absent"), data, ONCE), false, "nothing there");
});

test("write-once: bytes already published are kept without staging anything; control: a first publication stages and names", () => {
  const dir = tempDir();
  const target = join(dir, "x.json");
  const points: PublishPoint[] = [];
  try {
    setPublishHook((point) => points.push(point));
    assert.equal(publishBytes(target, Buffer.from("{}\n"), { writeOnce: ONCE, durable: false }), "published", "control");
    assert.deepEqual(points, ["staged", "named"]);
    points.length = 0;
    assert.equal(publishBytes(target, Buffer.from("{}\n"), { writeOnce: ONCE, durable: false }), "kept");
    assert.deepEqual(points, [], "nothing staged: the published bytes were compared first");
  } finally {
    setPublishHook(undefined);
  }
});

test("a staged file that is already gone is IO_ERROR naming the target, not a raw errno; control: a staged file that is there", () => {
  const dir = tempDir();
  assertCode(() => publishStaged(join(dir, "gone"), join(dir, "obj"), 5, { durable: false }), "IO_ERROR", join(dir, "obj"));
  writeFileSync(join(dir, "staged"), "12345");
  assert.equal(publishStaged(join(dir, "staged"), join(dir, "obj"), 5, { durable: false }), "published", "control");
});

test("staged publication leaves no descriptor open, published or refused; control: the count sees one open file", () => {
  const open = (): number => readdirSync("/proc/self/fd").length;
  const dir = tempDir();
  const before = open();
  const fd = openSync(join(dir, "x"), "w");
  assert.equal(open(), before + 1, "control");
  closeSync(fd);
  writeFileSync(join(dir, "staged"), "12345");
  publishStaged(join(dir, "staged"), join(dir, "obj"), 5, { durable: false });
  assert.equal(open(), before, "after a publication");
  writeFileSync(join(dir, "staged"), "1234");
  assertCode(() => publishStaged(join(dir, "staged"), join(dir, "obj2"), 5, { durable: false }), "SIZE_MISMATCH");
  assert.equal(open(), before, "after a refusal");
});
