/**
 * The tar gate is independent of how the stream is chunked: for any split of
 * the same bytes it yields the same member records, delivers each file's
 * exact bytes, and computes the same DiffID.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, it } from "node:test";
import fc from "fast-check";
import { DEFAULT_LIMITS } from "../../src/tree/layer-limits.ts";
import { assertCode } from "../helpers/errors.ts";
import { capturingGate } from "./gate-capture.ts";
import { dir, file, symlink, writeTar } from "../workload/fixtures/tar-writer.ts";

const tar = writeTar(
  [
    dir("d"),
    file("d/a", "x".repeat(700)),
    symlink("l", "d/a"),
    file("b".repeat(150), "long name", { longName: "gnu" }),
    file("p", "pax", { pax: { path: "p".repeat(120), mtime: "5" } }),
    file("e", ""),
  ],
  { trailing: Buffer.alloc(3000) },
);
const eofAt = tar.length - 3000 - 1024;

function run(sizes: number[]): { bodies: Map<number, Buffer>; records: unknown[]; diffId: string } {
  const { gate, records, bodies } = capturingGate();
  let at = 0;
  let i = 0;
  while (at < tar.length) {
    const n = Math.max(1, sizes[i++ % sizes.length]!);
    gate.push(tar.subarray(at, at + n));
    at += n;
  }
  gate.end();
  return { bodies, records, diffId: gate.diffId() };
}

describe("tar gate", () => {
  it("is independent of chunking", () => {
    const whole = run([tar.length]);
    assert.deepEqual(
      [...whole.bodies].map(([k, v]) => [k, v.toString()]),
      [
        [1, "x".repeat(700)],
        [3, "long name"],
        [4, "pax"],
        [5, ""],
      ],
    );
    assert.equal(whole.diffId, `sha256:${createHash("sha256").update(tar).digest("hex")}`);
    assert.deepEqual(
      (whole.records as { name: string }[]).map((r) => r.name),
      ["d/", "d/a", "l", "b".repeat(150), "p".repeat(120), "e"],
    );
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 1500 }), { minLength: 1, maxLength: 20 }), (sizes) => {
        const r = run(sizes);
        assert.deepEqual(r.bodies, whole.bodies);
        assert.deepEqual(r.records, whole.records);
        assert.equal(r.diffId, whole.diffId);
      }),
      { numRuns: 200 },
    );
  });
  it("refuses a member after the marker however the bytes are split", () => {
    const bad = Buffer.concat([tar.subarray(0, eofAt + 512), writeTar([file("x", "y")])]);
    for (const n of [1, 100, 511, 512, 513, 4096]) {
      const { gate } = capturingGate();
      assertCode(() => {
        for (let at = 0; at < bad.length; at += n) gate.push(bad.subarray(at, at + n));
      }, "TAR_TRAILING");
    }
  });
});

describe("a member's refusal names the member (issue 9)", () => {
  const gateOver = (items: Parameters<typeof writeTar>[0]) => () => {
    const { gate } = capturingGate(DEFAULT_LIMITS, "/layers/1");
    gate.push(writeTar(items));
    gate.end();
  };
  it("a device node, a FIFO and a file capability pass the gate named by their member path, for layer application to decide", () => {
    const { gate, records } = capturingGate(DEFAULT_LIMITS, "/layers/1");
    gate.push(
      writeTar([
        dir("dev"),
        { name: "dev/null", type: "char", devmajor: 1, devminor: 3 },
        { name: "short", type: "fifo", pax: { path: `deep/${"n".repeat(120)}` } },
        file("usr/bin/ping", "x", { pax: { "SCHILY.xattr.security.capability": "caps" } }),
      ]),
    );
    gate.end();
    assert.deepEqual(
      records.map((r) => [r.name, r.type, r.device, r.xattrs]),
      [
        ["dev/", "dir", undefined, undefined],
        ["dev/null", "chardev", { major: 1, minor: 3 }, undefined],
        [`deep/${"n".repeat(120)}`, "fifo", undefined, undefined],
        ["usr/bin/ping", "file", undefined, ["security.capability"]],
      ],
    );
    // an ACL is refused by the gate itself, named by the member path (no policy drops it)
    assertCode(gateOver([file("etc/shadow", "x", { pax: { "SCHILY.acl.access": "user::rw-" } })]), "TAR_XATTR", "/layers/1:etc/shadow");
    assertCode(gateOver([file("etc/shadow", "x", { pax: { "SCHILY.xattr.system.posix_acl_access": "a" } })]), "TAR_XATTR", "/layers/1:etc/shadow");
    // and so is every other type, e.g. a contiguous file
    assertCode(gateOver([{ name: "c", type: "contiguous" }]), "TAR_UNSUPPORTED_TYPE", "/layers/1:c");
    // control: the same members as plain files pass
    gateOver([dir("dev"), file("dev/null", ""), file("etc/shadow", "x"), file("c", "")])();
  });
});
