/**
 * The gate is cairn's only tar reader (issue 15 took tar-stream off the read
 * path). These tests hold its framing against two independent readers on the
 * archives real writers produce: GNU tar in each of its formats, tar-stream's
 * own writer and the fixture writer. Where the gate accepts an archive, every
 * member's name, type, size, link target and bytes must equal what tar-stream
 * extracts and what GNU tar lists, however the stream is chunked. A fuzz of
 * single-byte edits (checksum repaired, so the edit is not caught by the
 * checksum alone) checks that anything the gate still accepts, tar-stream reads
 * the same way: the two cannot disagree silently.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, linkSync, writeFileSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import fc from "fast-check";
import tarStream from "tar-stream";
import type { GateRecord } from "../../src/tree/tar-gate.ts";
import { capturingGate } from "./gate-capture.ts";
import { dir, file, hardlink, symlink, writeTar } from "../workload/fixtures/tar-writer.ts";

interface Member {
  name: string;
  type: string;
  size: number;
  linkname: string | undefined;
  data: string | undefined; // hex of a regular file's bytes
}

const TYPE: Record<GateRecord["type"], string> = {
  file: "file",
  dir: "directory",
  symlink: "symlink",
  hardlink: "link",
  chardev: "character-device",
  blockdev: "block-device",
  fifo: "fifo",
};

/** The gate's view, fed in chunks of the given sizes (cycled); throws its refusal. */
function viaGate(tar: Buffer, sizes: readonly number[] = [tar.length]): Member[] {
  const c = capturingGate();
  let at = 0;
  let i = 0;
  while (at < tar.length) {
    const n = Math.max(1, sizes[i++ % sizes.length]!);
    c.gate.push(tar.subarray(at, at + n));
    at += n;
  }
  c.gate.end();
  return c.records.map((r) => ({
    name: r.name,
    type: TYPE[r.type],
    size: r.size,
    linkname: r.linkname,
    data: r.type === "file" ? c.bodies.get(r.ordinal)!.toString("hex") : undefined,
  }));
}

/** tar-stream's view of the same bytes. */
async function viaTarStream(tar: Buffer): Promise<Member[]> {
  const out: Member[] = [];
  const extract = tarStream.extract();
  const done = new Promise<void>((resolve, reject) => {
    extract.on("entry", (h, stream, next) => {
      const parts: Buffer[] = [];
      stream.on("data", (d) => void parts.push(d as Buffer));
      stream.on("end", () => {
        out.push({
          name: h.name,
          type: h.type ?? "file",
          size: h.size ?? 0,
          linkname: h.linkname ?? undefined,
          data: h.type === "file" ? Buffer.concat(parts).toString("hex") : undefined,
        });
        next();
      });
    });
    extract.on("finish", resolve);
    extract.on("error", reject);
  });
  extract.end(tar);
  await done;
  return out;
}

const work = mkdtempSync(join(tmpdir(), "cairn-gate-diff-"));
after(() => rmSync(work, { recursive: true, force: true }));

/** A directory with what real trees hold: sizes around block boundaries, long and non-ASCII names, links. */
function sourceTree(): string {
  const root = join(work, "src");
  mkdirSync(join(root, "d", "sub"), { recursive: true });
  for (const n of [0, 1, 511, 512, 513, 1024, 70_000]) writeFileSync(join(root, "d", `f${n}`), Buffer.alloc(n, n % 251));
  const long = join(root, "d", "sub", `${"n".repeat(120)}-${"m".repeat(60)}`);
  writeFileSync(long, "long name");
  mkdirSync(join(root, "p".repeat(90), "q".repeat(90)), { recursive: true });
  writeFileSync(join(root, "p".repeat(90), "q".repeat(90), "r".repeat(50)), "prefix split");
  writeFileSync(join(root, "d", "grüße-日本"), "utf-8 name");
  symlinkSync("f512", join(root, "d", "link"));
  symlinkSync(`../${"t".repeat(150)}`, join(root, "d", "longlink"));
  linkSync(join(root, "d", "f513"), join(root, "d", "hard"));
  return root;
}

describe("the gate frames archives as tar-stream and GNU tar do", () => {
  const root = sourceTree();
  const formats = ["gnu", "oldgnu", "ustar", "pax"] as const;

  for (const format of formats) {
    it(`GNU tar --format=${format}: gate, tar-stream and tar -t agree on every member, for any chunking`, async () => {
      const out = join(work, `${format}.tar`);
      // ustar cannot carry names over its limits: leave those files out there.
      const exclude = format === "ustar" ? ["--exclude=*nnnnnnnnnn*", "--exclude=longlink", "--exclude=rrrrrrrrrr*"] : [];
      // whole-second mtimes and no atime/ctime: cairn refuses the rest (TAR_TIMESTAMP), as a test elsewhere shows
      const pax = format === "pax" ? ["--pax-option=delete=atime,delete=ctime"] : [];
      const args = ["--sort=name", `--format=${format}`, "--mtime=@1000000000", "--owner=0", "--group=0", "--numeric-owner", ...pax, ...exclude];
      execFileSync("tar", [...args, "-cf", out, "-C", root, "."], { env: { ...process.env, LC_ALL: "C.UTF-8" } });
      const tar = readFileSync(out);
      const gate = viaGate(tar);
      assert.deepEqual(gate, await viaTarStream(tar));
      const listed = execFileSync("tar", ["-tf", out], { encoding: "utf8", env: { ...process.env, LC_ALL: "C.UTF-8" } })
        .split("\n")
        .filter(Boolean);
      assert.deepEqual(
        gate.map((m) => m.name),
        listed,
      );
      assert.ok(gate.length >= (format === "ustar" ? 12 : 14), `members: ${gate.length}`);
      fc.assert(
        fc.property(fc.array(fc.integer({ min: 1, max: 5000 }), { minLength: 1, maxLength: 8 }), (sizes) => {
          assert.deepEqual(viaGate(tar, sizes), gate);
        }),
        { numRuns: 40 },
      );
    });
  }

  it("tar-stream's own writer and the fixture writer: gate and tar-stream agree", async () => {
    const pack = tarStream.pack();
    const parts: Buffer[] = [];
    pack.on("data", (d) => void parts.push(d as Buffer));
    const ended = new Promise<void>((r) => pack.on("end", () => r()));
    pack.entry({ name: "a", mode: 0o644, mtime: new Date(0) }, "alpha");
    pack.entry({ name: "dir", type: "directory", mode: 0o755, mtime: new Date(0) });
    pack.entry({ name: `dir/${"x".repeat(200)}`, mode: 0o600, mtime: new Date(1000) }, Buffer.alloc(1500, 7));
    pack.entry({ name: "s", type: "symlink", linkname: "a", mtime: new Date(0) });
    pack.finalize();
    await ended;
    const streamTar = Buffer.concat(parts);
    assert.deepEqual(viaGate(streamTar), await viaTarStream(streamTar));
    const fixture = writeTar([
      dir("d"),
      file("d/a", "x".repeat(700)),
      symlink("l", "d/a"),
      hardlink("h", "d/a"),
      file("b".repeat(150), "long name", { longName: "gnu" }),
      file("p", "pax", { pax: { path: "p".repeat(120), mtime: "5" } }),
      file(`${"q".repeat(120)}/${"r".repeat(60)}`, "prefix", { longName: "prefix" }),
      file("e", ""),
    ]);
    const gate = viaGate(fixture);
    assert.equal(gate.length, 8);
    assert.deepEqual(gate, await viaTarStream(fixture));
  });

  it("a single-byte edit the gate still accepts is read the same way by tar-stream (control: the unedited archive agrees)", async () => {
    const tar = writeTar([
      dir("d"),
      file("d/a", "x".repeat(700)),
      symlink("l", "d/a"),
      file("b".repeat(150), "long name", { longName: "gnu" }),
      file("p", "pax", { pax: { path: "p".repeat(120), mtime: "5" } }),
      file("e", "e"),
    ]);
    assert.deepEqual(viaGate(tar), await viaTarStream(tar));
    let accepted = 0;
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: tar.length - 1 }), fc.integer({ min: 1, max: 255 }), async (at, delta) => {
        const bad = Buffer.from(tar);
        bad[at] = (bad[at]! + delta) & 0xff;
        repairChecksum(bad, at - (at % 512));
        let gate: Member[];
        try {
          gate = viaGate(bad);
        } catch {
          refused++;
          return;
        }
        accepted++;
        assert.deepEqual(gate, await viaTarStream(bad), `edit at ${at}`);
      }),
      { numRuns: 600 },
    );
    assert.ok(accepted > 50 && refused > 50, `accepted ${accepted}, refused ${refused}`);
  });
});

/** Recomputes the checksum of the block at `start` when it looks like a header (keeps data blocks as they are). */
function repairChecksum(tar: Buffer, start: number): void {
  const h = tar.subarray(start, start + 512);
  if (h.toString("latin1", 257, 262) !== "ustar") return;
  h.fill(0x20, 148, 156);
  let sum = 0;
  for (const x of h) sum += x;
  h.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, 8, "latin1");
}
