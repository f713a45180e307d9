/**
 * The `--follow` reader (src/vm/follow.ts) on streams written by the test's
 * own protocol writer: it reports every output frame, in order, whatever
 * piece of the file QEMU had written when it polled (byte by byte here);
 * it stops at a record length out of bounds or a wrong magic without
 * buffering further (control: the same stream without the defect is
 * reported whole). Its output is best effort; the decoder judges the stream.
 */
import assert from "node:assert/strict";
import { appendFileSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { ProtocolFollower } from "../../src/vm/follow.ts";
import { StreamWriter } from "./fixtures/records.ts";

function stream(): Buffer {
  const w = new StreamWriter().hello();
  w.record(2, 1);
  w.frame(1, 1, 0, Buffer.from("hel"));
  w.frame(1, 2, 0, Buffer.from("oops\n"));
  w.frame(1, 1, 3, Buffer.from("lo\n"));
  w.exit(1, 0, Buffer.from("hello\n"), Buffer.from("oops\n"));
  return w.final(0, 1);
}

function follow(bytes: Buffer, step: number): string[] {
  const file = join(mkdtempSync(join(tmpdir(), "cairn-follower-")), "protocol.bin");
  writeFileSync(file, "");
  const got: string[] = [];
  const f = new ProtocolFollower(file, (inv, s, b) => got.push(`${inv} ${s} ${b.toString("utf8")}`));
  for (let i = 0; i < bytes.length; i += step) {
    appendFileSync(file, bytes.subarray(i, i + step));
    f.poll();
  }
  f.stop();
  return got;
}

describe("the --follow reader", () => {
  const expected = ["1 stdout hel", "1 stderr oops\n", "1 stdout lo\n"];

  it("reports every frame in order, polled after every byte or after the whole stream", () => {
    assert.deepEqual(follow(stream(), 1), expected);
    assert.deepEqual(follow(stream(), 1 << 20), expected);
  });

  it("stops at a record length out of bounds and at a wrong magic (control: the intact stream above)", () => {
    const s = stream();
    const cut = Buffer.from(s);
    // the fourth record (the second frame) claims 1 GiB: nothing from it on is reported
    let pos = 8;
    for (let i = 0; i < 3; i++) pos += 4 + cut.readUInt32LE(pos);
    cut.writeUInt32LE(1 << 30, pos);
    assert.deepEqual(follow(cut, 7), ["1 stdout hel"]);
    const magic = Buffer.from(s);
    magic[0] = 0x58;
    assert.deepEqual(follow(magic, 64), []);
  });
});
