/**
 * The fs identity writes each file's 32 digest bytes through a table
 * (`putDigestBytes`) instead of `buf.write(digestHex(d), at, "hex")` (claim
 * W61): for every digest string the two write the same bytes and agree on
 * whether 32 were written (hex longer than 64 digits refused, see reference): valid digests in both cases of hex, a bad digit
 * at every position, short and long hex, no prefix, another prefix, and
 * characters beyond ASCII whose low byte is a hex digit. Both quirks of the
 * old decoder are shown on their own, each beside its control.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { digestHex } from "../../src/core/index.ts";
import { putDigestBytes } from "../../src/tree/fs-digest.ts";

/**
 * The definition it replaces: Buffer's hex decoder, 32 bytes or a refusal,
 * less two quirks now refused: hex longer than 64 digits was refused or not
 * by where the frame lay in the scratch buffer (a write past 32 bytes
 * returned more than 32), and a character beyond ASCII was read by its low
 * byte (U+0130 as "0"), so two digest strings framed the same.
 */
function reference(d: string): Buffer | undefined {
  const buf = Buffer.alloc(40);
  const h = digestHex(d as never);
  return buf.write(h, 4, "hex") === 32 && h.length === 64 && !/[^\x00-\x7f]/.test(h) ? buf : undefined;
}

function fast(d: string): Buffer | undefined {
  const buf = Buffer.alloc(40);
  return putDigestBytes(buf, 4, d) ? buf : undefined;
}

const hex = (i: number): string => createHash("sha256").update(String(i)).digest("hex");

test("putDigestBytes writes exactly what Buffer's hex write of the digest's hex writes, and refuses where it stops short", () => {
  const cases: string[] = [];
  for (let i = 0; i < 500; i++)
    cases.push(`sha256:${hex(i)}`, `sha256:${hex(i).toUpperCase()}`, hex(i), `blake3:${hex(i)}`, `sha256:${hex(i)}ff`, `sha256:${hex(i)}z`);
  const base = `sha256:${hex(7)}`;
  for (let at = 7; at < base.length; at++) {
    for (const bad of ["g", "G", "/", ":", "@", "`", " ", "\0", "\u0130", "\u0661", "\u0141", "\ud83d"])
      cases.push(base.slice(0, at) + bad + base.slice(at + 1));
  }
  for (let n = 0; n <= 66; n++) cases.push(`sha256:${hex(3).repeat(2).slice(0, n)}`);
  cases.push("", ":", "sha256:", `:${hex(1)}`, `sha256:${hex(1).slice(1)}`);
  let accepted = 0;
  for (const d of cases) {
    const want = reference(d);
    const got = fast(d);
    assert.deepEqual(got, want, JSON.stringify(d));
    if (want !== undefined) accepted++;
  }
  // control: both sides accept the valid digests (both cases, any prefix, longer hex) and refuse the rest
  assert.ok(accepted >= 2000, `${accepted} accepted`);
  assert.ok(cases.length - accepted > 500, `${cases.length - accepted} refused`);
  assert.deepEqual(fast(base)!.subarray(4, 36), Buffer.from(hex(7), "hex"), "control: the digest's own bytes");
});

test("the old decoder's quirks are refused: a character beyond ASCII read by its low byte, hex past 64 digits", () => {
  const d = `sha256:${hex(9)}`;
  const wide = `sha256:\u0130${hex(9).slice(1)}`; // U+0130's low byte is "0"
  const old = Buffer.alloc(32);
  assert.equal(old.write(digestHex(`sha256:0${hex(9).slice(1)}` as never), 0, "hex"), 32);
  assert.equal(Buffer.alloc(32).write(digestHex(wide as never), 0, "hex"), 32, "the old decoder took it");
  assert.equal(fast(wide), undefined);
  assert.equal(Buffer.alloc(40).write(`${hex(9)}ab`, 0, "hex"), 33, "the old write went past 32 bytes with room");
  assert.equal(fast(`${d}ab`), undefined);
  assert.notEqual(fast(d), undefined, "control: the plain digest");
});
