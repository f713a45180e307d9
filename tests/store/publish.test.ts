import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { publishBytes, publishStaged, type WriteOnce } from "../../src/store/index.ts";
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
