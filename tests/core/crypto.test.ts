import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, statSync, readFileSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  generateSigningKey,
  parseDigest,
  pae,
  parseEnvelope,
  readSigningKey,
  readVerifyingKey,
  safeComponent,
  sha256,
  signEnvelope,
  verifyEnvelope,
  writeFileAtomic,
  writeKeyPair,
  digestComponents,
} from "../../src/core/index.ts";
import { assertCode } from "../helpers/errors.ts";

const HEX = "a".repeat(64);

test("digests: valid forms parse, every malformed form is refused", () => {
  assert.equal(parseDigest(`sha256:${HEX}`), `sha256:${HEX}`);
  assert.equal(parseDigest(`blake3:${HEX}`), `blake3:${HEX}`);
  for (const bad of ["", "sha256:", `sha256:${"A".repeat(64)}`, `sha256:${HEX}0`, `md5:${HEX}`, `sha256:${"g".repeat(64)}`, ` sha256:${HEX}`, 42, null]) {
    assertCode(() => parseDigest(bad), "DIGEST_INVALID");
  }
  assertCode(() => parseDigest(`blake3:${HEX}`, "", "sha256"), "DIGEST_INVALID");
  assert.equal(sha256(""), "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
});

test("PAE matches the DSSE specification's example", () => {
  assert.equal(pae("http://example.com/HelloWorld", Buffer.from("hello world")).toString(), "DSSEv1 29 http://example.com/HelloWorld 11 hello world");
});

test("DSSE: sign then verify; wrong type, wrong key, tampered payload all fail", () => {
  const k = generateSigningKey();
  const other = generateSigningKey();
  const env = signEnvelope("application/vnd.cairn.test+json", Buffer.from('{"a":1}'), [k]);
  const parsed = parseEnvelope(JSON.parse(JSON.stringify(env)));
  assert.equal(verifyEnvelope(parsed, "application/vnd.cairn.test+json", [k]).payload.toString(), '{"a":1}');
  assertCode(() => verifyEnvelope(parsed, "application/other", [k]), "SIGNATURE_INVALID");
  assertCode(() => verifyEnvelope(parsed, "application/vnd.cairn.test+json", [other]), "SIGNATURE_INVALID");
  const tampered = { ...parsed, payload: Buffer.from('{"a":2}').toString("base64") };
  assertCode(() => verifyEnvelope(tampered, "application/vnd.cairn.test+json", [k]), "SIGNATURE_INVALID");
  assertCode(() => verifyEnvelope({ ...parsed, signatures: [] }, "application/vnd.cairn.test+json", [k]), "SIGNATURE_MISSING");
});

test("key files: private key is 0600, public key reads back with the same key id", () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-keys-"));
  const k = generateSigningKey();
  const { keyPath, pubPath } = writeKeyPair(join(dir, "k"), k);
  assert.equal(statSync(keyPath).mode & 0o777, 0o600);
  assert.equal(readSigningKey(keyPath).keyId, k.keyId);
  assert.equal(readVerifyingKey(pubPath).keyId, k.keyId);
  assertCode(() => writeKeyPair(join(dir, "k"), k), "IO_ERROR");
  assertCode(() => readVerifyingKey(keyPath.replace(".key", ".missing")), "IO_ERROR");
  writeFileAtomic(join(dir, "junk.pub"), "not a key");
  assertCode(() => readVerifyingKey(join(dir, "junk.pub")), "KEY_INVALID");
});

test("atomic writes leave no temporary files and set the mode exactly", () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-atomic-"));
  const old = process.umask(0o077);
  try {
    writeFileAtomic(join(dir, "f"), "x", { mode: 0o644 });
  } finally {
    process.umask(old);
  }
  assert.equal(statSync(join(dir, "f")).mode & 0o777, 0o644);
  writeFileAtomic(join(dir, "f"), "y");
  assert.equal(readFileSync(join(dir, "f"), "utf8"), "y");
  assert.deepEqual(readdirSync(dir), ["f"]);
});

test("safe path components refuse traversal; a control passes", () => {
  assert.equal(safeComponent("python-3.12.1-glibc2.36-x86_64"), "python-3.12.1-glibc2.36-x86_64");
  for (const bad of ["..", "a/b", ".hidden", "", "a\0b", "a..b", "../x", "/abs"]) assertCode(() => safeComponent(bad), "PATH_UNSAFE");
  assert.deepEqual(digestComponents(`sha256:${HEX}`), ["sha256", HEX]);
  assertCode(() => digestComponents(`sha256:../${HEX.slice(3)}`), "DIGEST_INVALID");
});

test("bounded whole-file reads: over the limit, a symlink, a directory are refused; a control reads", async () => {
  const { readFileBounded } = await import("../../src/core/index.ts");
  const { symlinkSync, mkdirSync } = await import("node:fs");
  const dir = mkdtempSync(join(tmpdir(), "cairn-bounded-"));
  writeFileAtomic(join(dir, "f"), "0123456789");
  assert.equal(readFileBounded(join(dir, "f"), 10, "test.bytes").toString(), "0123456789");
  const e = assertCode(() => readFileBounded(join(dir, "f"), 9, "test.bytes"), "LIMIT_EXCEEDED");
  assert.match(e.message, /test\.bytes/);
  symlinkSync(join(dir, "f"), join(dir, "link"));
  assertCode(() => readFileBounded(join(dir, "link"), 100, "test.bytes"), "IO_ERROR");
  mkdirSync(join(dir, "d"));
  assertCode(() => readFileBounded(join(dir, "d"), 100, "test.bytes"), "IO_ERROR");
});
