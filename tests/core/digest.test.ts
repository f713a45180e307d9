// Typed digests (src/core/digest.ts): the parse refusals name their field,
// nothing but a string is a digest, and the hashers and the verifier agree
// with known values. Written to kill StrykerJS survivors (bench/mutation/README.md).
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { blake3, ContentHasher, isDigest, isSha256, parseDigest, parseSha256, Sha256Hasher, sha256, sha256Text, verifyDigest } from "../../src/core/index.ts";
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

test("ContentHasher equals sha256 of the whole content for any chunking, declared size whole or not (property)", () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 3000 }), fc.array(fc.integer({ min: 1, max: 1200 }), { minLength: 1, maxLength: 6 }), (data, sizes) => {
      const h = new ContentHasher(data.length);
      let at = 0;
      let i = 0;
      while (at < data.length) {
        const n = sizes[i++ % sizes.length]!;
        h.update(data.subarray(at, at + n));
        at += n;
      }
      assert.equal(h.raw().toString("hex"), sha256(data).slice("sha256:".length), "the raw bytes are the digest's");
      assert.equal(h.digest(), sha256(data));
      assert.equal(h.size, data.length);
    }),
    { numRuns: 500 },
  );
  assert.equal(new ContentHasher(0).digest(), sha256(new Uint8Array(0)), "an empty content");
  const short = new ContentHasher(10);
  short.update(Buffer.from("abc"));
  assert.equal(short.digest(), sha256("abc"), "fewer bytes than declared are hashed as they came (the caller checks the size)");
});

test("ContentHasher refuses bytes after a content it hashed in one call (control: the same bytes with their size declared)", () => {
  const h = new ContentHasher(3);
  h.update(Buffer.from("abc"));
  h.update(new Uint8Array(0));
  assertCode(() => h.update(Buffer.from("d")), "INTERNAL");
  const whole = new ContentHasher(4);
  whole.update(Buffer.from("abc"));
  whole.update(Buffer.from("d"));
  assert.equal(whole.digest(), sha256("abcd"));
});

test("sha256Text writes the prefix and the lower-case hex of any 32 bytes; other lengths are refused (control: 32 bytes)", () => {
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), (raw) => {
      assert.equal(sha256Text(raw), `sha256:${Buffer.from(raw).toString("hex")}`);
    }),
  );
  // every high nibble (bytes 7, 15, …, 255), and the digest of nothing through every hasher
  const all = Buffer.from(Array.from({ length: 32 }, (_, i) => (i * 8 + 7) & 0xff));
  assert.equal(sha256Text(all), `sha256:${all.toString("hex")}`);
  assert.equal(sha256(""), EMPTY_SHA256);
  assert.equal(new Sha256Hasher().digest(), EMPTY_SHA256);
  assert.equal(new ContentHasher(0).digest(), EMPTY_SHA256);
  assertCode(() => sha256Text(new Uint8Array(31)), "INTERNAL", "digest");
  assert.equal(sha256Text(new Uint8Array(32)), `sha256:${"0".repeat(64)}`);
});

test("isSha256 accepts exactly what parseSha256 accepts (control: real digests are accepted)", () => {
  const accepts = (v: unknown): boolean => {
    try {
      parseSha256(v);
      return true;
    } catch {
      return false;
    }
  };
  const good = sha256("abc");
  assert.ok(isSha256(good) && accepts(good), "control: a real digest");
  const hex = "0123456789abcdef";
  const cases: unknown[] = [
    good,
    good.toUpperCase(),
    `sha256:${good.slice(7).toUpperCase()}`,
    `${good}0`,
    good.slice(0, -1),
    `blake3:${good.slice(7)}`,
    "",
    7,
    null,
    `sha256:${"g".repeat(64)}`,
  ];
  for (let i = 0; i < 256; i++) cases.push(`${good.slice(0, 7 + (i % 64))}${String.fromCharCode(i)}${good.slice(8 + (i % 64))}`);
  fc.assert(
    fc.property(fc.string({ unit: fc.constantFrom(...hex, "A", "g", ":", "é"), minLength: 60, maxLength: 66 }), (tail) => {
      assert.equal(isSha256(`sha256:${tail}`), accepts(`sha256:${tail}`));
    }),
  );
  for (const c of cases) assert.equal(isSha256(c), accepts(c), JSON.stringify(c));
});
