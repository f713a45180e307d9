// Typed digests (src/core/digest.ts): the parse refusals name their field,
// nothing but a string is a digest, and the hashers and the verifier agree
// with known values. Written to kill StrykerJS survivors (bench/mutation/README.md).
import { test } from "node:test";
import assert from "node:assert/strict";
import { blake3, isDigest, parseDigest, parseSha256, Sha256Hasher, sha256, verifyDigest } from "../../src/core/index.ts";
import { digestAlgorithm, digestHex } from "../../src/core/digest.ts";
import { assertCode } from "../helpers/errors.ts";

const HEX = "0123456789abcdef".repeat(4);
const EMPTY_SHA256 = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const EMPTY_BLAKE3 = "blake3:af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262";

test("digests: every refusal names the field it was given; the same forms parse without a field name", () => {
  assert.equal(parseDigest(`sha256:${HEX}`, "/layers/0"), `sha256:${HEX}`);
  assertCode(() => parseDigest("", "/a"), "DIGEST_INVALID", "/a");
  assertCode(() => parseDigest(7, "/b"), "DIGEST_INVALID", "/b");
  assertCode(() => parseDigest(`sha256:${HEX}x`, "/c"), "DIGEST_INVALID", "/c");
  assertCode(() => parseDigest(`blake3:${HEX}`, "/d", "sha256"), "DIGEST_INVALID", "/d");
  assert.equal(parseDigest(`blake3:${HEX}`, "/e", "blake3"), `blake3:${HEX}`);
  // Without a field name the refusal names the root, "".
  assertCode(() => parseDigest("sha256:x"), "DIGEST_INVALID", "");
  assertCode(() => parseSha256(`blake3:${HEX}`), "DIGEST_INVALID", "");
});

test("digests: an object whose text is a valid digest is not a digest; the string is", () => {
  const lookalike = { toString: () => `sha256:${HEX}` };
  assertCode(() => parseDigest(lookalike), "DIGEST_INVALID");
  assertCode(() => parseSha256(lookalike), "DIGEST_INVALID");
  assert.equal(isDigest(lookalike), false);
  assert.equal(isDigest(`sha256:${HEX}`), true);
  assert.equal(isDigest(`blake3:${HEX}`), true);
  assert.equal(isDigest(`sha256:${HEX.toUpperCase()}`), false);
  assert.equal(isDigest(`xsha256:${HEX}`), false);
  assert.equal(isDigest(`sha256:${HEX}\n`), false);
});

test("digests: parseSha256 takes sha256 and refuses blake3", () => {
  assert.equal(parseSha256(`sha256:${HEX}`, "/x"), `sha256:${HEX}`);
  assertCode(() => parseSha256(`blake3:${HEX}`, "/x"), "DIGEST_INVALID", "/x");
  assert.equal(parseDigest(`blake3:${HEX}`, "", "blake3"), `blake3:${HEX}`);
  assertCode(() => parseDigest(`sha256:${HEX}`, "", "blake3"), "DIGEST_INVALID");
});

test("digests: algorithm and hex split at the colon", () => {
  assert.equal(digestAlgorithm(parseDigest(`blake3:${HEX}`)), "blake3");
  assert.equal(digestAlgorithm(parseDigest(`sha256:${HEX}`)), "sha256");
  assert.equal(digestHex(parseDigest(`sha256:${HEX}`)), HEX);
});

test("hashers: known values for empty input, strings hash as their UTF-8, the incremental hasher matches", () => {
  assert.equal(sha256(""), EMPTY_SHA256);
  assert.equal(blake3(""), EMPTY_BLAKE3);
  assert.equal(blake3(new Uint8Array(0)), EMPTY_BLAKE3);
  assert.equal(blake3("é€"), blake3(Buffer.from("é€", "utf8")));
  assert.notEqual(blake3("é€"), blake3(Buffer.from("é€", "latin1")));
  const h = new Sha256Hasher();
  assert.equal(h.size, 0);
  assert.equal(h.update(Buffer.from("ab")).update(Buffer.from("cde")), h);
  assert.equal(h.size, 5);
  assert.equal(h.digest(), sha256("abcde"));
  assert.equal(new Sha256Hasher().digest(), EMPTY_SHA256);
});

test("verifyDigest: the matching digest passes for either algorithm; any other is DIGEST_MISMATCH naming the path", () => {
  const data = Buffer.from("payload");
  verifyDigest(data, sha256(data), "/blob");
  verifyDigest(data, blake3(data), "/blob");
  assertCode(() => verifyDigest(data, sha256("other"), "/blob"), "DIGEST_MISMATCH", "/blob");
  assertCode(() => verifyDigest(data, blake3("other"), "/blob"), "DIGEST_MISMATCH", "/blob");
  // The same hex under the other algorithm name is another digest.
  assertCode(() => verifyDigest(data, parseDigest(`blake3:${digestHex(sha256(data))}`), "/blob"), "DIGEST_MISMATCH", "/blob");
});
