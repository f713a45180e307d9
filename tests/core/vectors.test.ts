// Official vectors from ../shared/vectors: JCS (RFC 8785), BLAKE3, Ed25519 (RFC 8032).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { blake3, canonicalize, parseJsonText, signBytes, signingKeyFromSeed, verifyBytes, verifyingKeyFromRaw } from "../../src/core/index.ts";
import { skipUnlessVectors, vectorsPath } from "../helpers/vectors.ts";

test("JCS: every RFC 8785 vector canonicalizes to its expected bytes", { skip: skipUnlessVectors("jcs") }, () => {
  const dir = vectorsPath("jcs")!;
  const names = readdirSync(join(dir, "input")).filter((n) => n.endsWith(".json"));
  assert.ok(names.length >= 6);
  for (const name of names) {
    // Read with JSON.parse: the vectors include floats, which our strict reader also accepts.
    const input = JSON.parse(readFileSync(join(dir, "input", name), "utf8"));
    const expected = readFileSync(join(dir, "output", name), "utf8");
    assert.equal(canonicalize(input), expected, name);
    // The strict reader yields the same model (null-prototype objects canonicalize alike),
    // except for the number vectors, which hold integers beyond 2^53 that it refuses by design.
    if (name === "values.json" || name === "arrays.json" || name === "numbers.json") continue;
    assert.equal(canonicalize(parseJsonText(readFileSync(join(dir, "input", name), "utf8"))), expected, `${name} via strict reader`);
  }
});

test("BLAKE3: every official vector (first 32 bytes of hash)", { skip: skipUnlessVectors("blake3") }, () => {
  const v = JSON.parse(readFileSync(vectorsPath("blake3", "test_vectors.json")!, "utf8")) as {
    cases: { input_len: number; hash: string }[];
  };
  assert.ok(v.cases.length > 10);
  for (const c of v.cases) {
    const input = Uint8Array.from({ length: c.input_len }, (_, i) => i % 251);
    assert.equal(blake3(input), `blake3:${c.hash.slice(0, 64)}`, `input_len ${c.input_len}`);
  }
});

test("Ed25519: RFC 8032 vectors sign and verify; a flipped bit fails", { skip: skipUnlessVectors("ed25519") }, () => {
  const v = JSON.parse(readFileSync(vectorsPath("ed25519", "rfc8032.json")!, "utf8")) as {
    vectors: { name: string; secret: string; public: string; message: string; signature: string }[];
  };
  assert.ok(v.vectors.length >= 3);
  for (const t of v.vectors) {
    const key = signingKeyFromSeed(Buffer.from(t.secret, "hex"));
    const pub = verifyingKeyFromRaw(Buffer.from(t.public, "hex"));
    assert.equal(key.keyId, pub.keyId, t.name);
    const msg = Buffer.from(t.message, "hex");
    assert.equal(signBytes(key, msg).toString("hex"), t.signature, t.name);
    assert.ok(verifyBytes(pub, msg, Buffer.from(t.signature, "hex")), t.name);
    const bad = Buffer.from(t.signature, "hex");
    bad[0]! ^= 1;
    assert.equal(verifyBytes(pub, msg, bad), false, `${t.name} tampered`);
  }
});
