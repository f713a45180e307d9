import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, symlinkSync, writeFileSync, mkdirSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkStaticExecutable } from "../../src/workload/elf.ts";
import { readSourceFile } from "../../src/workload/source-file.ts";
import { assertCode } from "../helpers/errors.ts";
import { outcomeInChild } from "../helpers/in-child.ts";
import { buildProgram, GCC_SKIP, programBytes } from "./fixtures/static-program.ts";

const opts = { skip: GCC_SKIP };

test("a gcc -static -no-pie program is accepted (positive control)", opts, () => {
  const facts = checkStaticExecutable(programBytes("static"), "hello");
  assert.ok(facts.loadSegments >= 1);
});

test("a dynamically linked program is ELF_DYNAMIC", opts, () => {
  assertCode(() => checkStaticExecutable(programBytes("dynamic"), "x"), "ELF_DYNAMIC");
});

test("a static PIE is ELF_STATIC_PIE with a -no-pie hint", opts, () => {
  const e = assertCode(() => checkStaticExecutable(programBytes("static-pie"), "x"), "ELF_STATIC_PIE");
  assert.match(e.hint ?? "", /-no-pie/);
});

/** What binutils' readelf says of a program (an oracle independent of cairn's reader): its ELF type and which of PT_DYNAMIC and PT_INTERP it has. */
function readelf(kind: "static" | "static-pie" | "no-loader"): { type: string; dynamic: boolean; interp: boolean } {
  const path = buildProgram(kind);
  const type = /Type:\s+(\w+)/.exec(execFileSync("readelf", ["-h", path], { encoding: "utf8" }))![1]!;
  const segments = execFileSync("readelf", ["-lW", path], { encoding: "utf8" });
  return { type, dynamic: /^\s+DYNAMIC\s/m.test(segments), interp: /^\s+INTERP\s/m.test(segments) };
}

test("PT_DYNAMIC without an interpreter in a fixed-address executable is ELF_DYNAMIC, named as such (issue 31, case 19c)", opts, () => {
  // gcc -no-pie -Wl,--no-dynamic-linker: it needs libc.so, and nothing would load it.
  assert.deepEqual(readelf("no-loader"), { type: "EXEC", dynamic: true, interp: false }, "the fixture is what the test says");
  const e = assertCode(() => checkStaticExecutable(programBytes("no-loader"), "x"), "ELF_DYNAMIC", "x");
  assert.match(e.message, /PT_DYNAMIC/);
  assert.match(e.message, /no program interpreter/);
  assert.deepEqual(readelf("static"), { type: "EXEC", dynamic: false, interp: false }, "control: the accepted program has neither");
  checkStaticExecutable(programBytes("static"), "hello");
});

test("a static PIE (ET_DYN, PT_DYNAMIC, no interpreter) is said to be static, and refused by the fixed-address rule (issue 31, case 19c)", opts, () => {
  assert.deepEqual(readelf("static-pie"), { type: "DYN", dynamic: true, interp: false }, "gcc -static-pie gives PT_DYNAMIC without PT_INTERP");
  const e = assertCode(() => checkStaticExecutable(programBytes("static-pie"), "x"), "ELF_STATIC_PIE", "x");
  assert.match(e.message, /static position-independent executable/);
  assert.match(e.message, /fixed-address/);
  assert.doesNotMatch(e.message, /dynamically linked/, "a static PIE is not called dynamically linked");
  // Control: the same program with an interpreter named is dynamically linked.
  assertCode(() => checkStaticExecutable(programBytes("dynamic"), "x"), "ELF_DYNAMIC");
});

test(
  "a program that names an interpreter is ELF_DYNAMIC saying PT_INTERP, whether ET_EXEC or a PIE (kill StrykerJS survivors: the PT_INTERP check)",
  opts,
  () => {
    // -no-pie: ET_EXEC with PT_INTERP (and PT_DYNAMIC): the message names the interpreter, not a dynamic section without one.
    const exec = assertCode(() => checkStaticExecutable(programBytes("dynamic"), "x"), "ELF_DYNAMIC", "x");
    assert.match(exec.message, /PT_INTERP/);
    assert.doesNotMatch(exec.message, /no program interpreter/);
    // gcc's default PIE: ET_DYN with PT_INTERP is dynamically linked, not a static PIE.
    const pie = assertCode(() => checkStaticExecutable(programBytes("dynamic-pie"), "x"), "ELF_DYNAMIC", "x");
    assert.match(pie.message, /program interpreter/);
    assertCode(() => checkStaticExecutable(programBytes("static-pie"), "x"), "ELF_STATIC_PIE"); // control: no interpreter
  },
);

function patched(edit: (b: Buffer) => void): Buffer {
  const b = Buffer.from(programBytes("static"));
  edit(b);
  return b;
}

test("wrong architecture: another machine, 32-bit class, big-endian", opts, () => {
  assertCode(
    () =>
      checkStaticExecutable(
        patched((b) => b.writeUInt16LE(183, 18)),
        "x",
      ),
    "ELF_WRONG_ARCH",
  );
  assertCode(
    () =>
      checkStaticExecutable(
        patched((b) => (b[4] = 1)),
        "x",
      ),
    "ELF_WRONG_ARCH",
  );
  assertCode(
    () =>
      checkStaticExecutable(
        patched((b) => (b[5] = 2)),
        "x",
      ),
    "ELF_WRONG_ARCH",
  );
});

test("malformed: no magic, truncated, header table outside file, relocatable type, entry outside segments", opts, () => {
  assertCode(() => checkStaticExecutable(Buffer.from("#!/bin/sh\necho hi\n"), "x"), "ELF_MALFORMED");
  assertCode(() => checkStaticExecutable(programBytes("static").subarray(0, 40), "x"), "ELF_MALFORMED");
  assertCode(() => checkStaticExecutable(programBytes("static").subarray(0, 100), "x"), "ELF_MALFORMED");
  assertCode(
    () =>
      checkStaticExecutable(
        patched((b) => b.writeBigUInt64LE(1n << 40n, 32)),
        "x",
      ),
    "ELF_MALFORMED",
  );
  assertCode(
    () =>
      checkStaticExecutable(
        patched((b) => b.writeUInt16LE(1, 16)),
        "x",
      ),
    "ELF_MALFORMED",
  );
  assertCode(
    () =>
      checkStaticExecutable(
        patched((b) => b.writeBigUInt64LE(1n, 24)),
        "x",
      ),
    "ELF_MALFORMED",
  );
  assertCode(
    () =>
      checkStaticExecutable(
        patched((b) => b.writeUInt16LE(0, 56)),
        "x",
      ),
    "ELF_MALFORMED",
  );
});

test("source read: not regular (dir, symlink, FIFO, device), oversized, and a positive control", () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-src-"));
  const f = join(dir, "f");
  writeFileSync(f, "12345");
  assert.equal(readSourceFile(f, 5, "fileSize").toString(), "12345");
  mkdirSync(join(dir, "d"));
  assertCode(() => readSourceFile(join(dir, "d"), 100, "fileSize"), "SOURCE_NOT_REGULAR");
  symlinkSync(f, join(dir, "l"));
  assertCode(() => readSourceFile(join(dir, "l"), 100, "fileSize"), "SOURCE_NOT_REGULAR");
  // A FIFO and a device in a child with a timeout: opening either without O_NONBLOCK could block the thread.
  const SOURCE_FILE = new URL("../../src/workload/source-file.ts", import.meta.url);
  const read = (p: string) => outcomeInChild(SOURCE_FILE, `m.readSourceFile(${JSON.stringify(p)}, 100, "fileSize")`);
  assert.equal(read(f), "ok", "control: a regular file is read in the child");
  execFileSync("mkfifo", [join(dir, "p")]);
  assert.equal(read(join(dir, "p")), "SOURCE_NOT_REGULAR");
  assert.equal(read("/dev/null"), "SOURCE_NOT_REGULAR");
  const e = assertCode(() => readSourceFile(f, 4, "fileSize"), "SOURCE_OVERSIZED");
  assert.match(e.message, /fileSize/);
});

test("source read: a file with more bytes than fstat reported (it grew) is SOURCE_CHANGED; control: a regular file", () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-src-"));
  writeFileSync(join(dir, "f"), "");
  assert.equal(readSourceFile(join(dir, "f"), 100, "fileSize").length, 0, "control");
  // /proc files report size 0 and then yield bytes, as a file that grows between fstat and read does.
  assertCode(() => readSourceFile("/proc/self/status", 1 << 20, "fileSize"), "SOURCE_CHANGED");
});

test("source read: a file rewritten while being read is SOURCE_CHANGED", async () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-src-"));
  const f = join(dir, "grow");
  writeFileSync(f, Buffer.alloc(64 * 1024 * 1024, 1));
  // A writer appends continuously; the reader must notice the growth or the changed stat.
  const child = execFileSync("sh", ["-c", `(while :; do printf x >> '${f}'; done) >/dev/null 2>&1 & echo $!`])
    .toString()
    .trim();
  try {
    let sawChange = false;
    for (let i = 0; i < 50 && !sawChange; i++) {
      try {
        readSourceFile(f, 1 << 30, "fileSize");
      } catch (err) {
        assert.equal((err as { code?: string }).code, "SOURCE_CHANGED");
        sawChange = true;
      }
    }
    assert.ok(sawChange, "a concurrently growing file must be refused");
  } finally {
    process.kill(Number(child), "SIGKILL");
  }
});
