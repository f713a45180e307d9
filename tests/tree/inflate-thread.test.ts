/**
 * A stored gzip layer is inflated on the inflate thread (core/inflate-thread.ts):
 * reading, the stored hash and gunzip run there, and the gate frames the
 * chunks and hashes them (the DiffID) on the main thread. The in-thread path (`inflateHere`), kept for bytes in
 * memory and plain tar, is the definition: on every layer below both paths
 * must give the same members, bytes and DiffID, and on every broken layer
 * the same refusal. The thread is reused after a refusal, so each refusal is
 * followed by a good layer read on the same thread (the control).
 */
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { closeSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { after, describe, it } from "node:test";
import { CairnError, createExclusive, type Sha256Digest } from "../../src/core/index.ts";
import { DEFAULT_LIMITS, type LayerLimits } from "../../src/tree/layer-limits.ts";
import { readLayer, type InflationBound, type LayerStreamInput } from "../../src/tree/layer-reader.ts";
import { dir, file, symlink, writeTar } from "../workload/fixtures/tar-writer.ts";

const work = mkdtempSync(join(tmpdir(), "cairn-inflate-"));
after(() => rmSync(work, { recursive: true, force: true }));

const sha = (b: Uint8Array): Sha256Digest => `sha256:${createHash("sha256").update(b).digest("hex")}` as Sha256Digest;

let n = 0;
function stored(bytes: Buffer): string {
  const p = join(work, `layer-${++n}.tar.gz`);
  writeFileSync(p, bytes);
  return p;
}

interface Seen {
  members: string[];
  progress: number;
}

type Options = Partial<Pick<LayerStreamInput, "diffId" | "digest" | "size" | "inflation" | "compression" | "copyFd">> & {
  limits?: LayerLimits;
  refuseAt?: string;
};

/** One read of `path`; the members as "name type size sha256", or the refusal's code. */
async function read(path: string, here: boolean, o: Options = {}): Promise<Seen | string> {
  const seen: Seen = { members: [], progress: 0 };
  const budget = { compressedBytes: 0, expandedBytes: 0, entries: 0, onProgress: () => void seen.progress++ };
  const input: LayerStreamInput = { path, compression: "gzip", where: "/layers/0", inflateHere: here, ...o };
  delete (input as { limits?: unknown }).limits;
  try {
    await readLayer(input, o.limits ?? DEFAULT_LIMITS, budget, (rec) => {
      if (rec.name === o.refuseAt) throw new CairnError("TAR_UNSAFE_PATH", "refused by the test", { path: rec.name });
      if (rec.type !== "file") {
        seen.members.push(`${rec.name} ${rec.type} ${rec.size}`);
        return undefined;
      }
      const h = createHash("sha256");
      return {
        write: (c) => void h.update(c),
        end: () => void seen.members.push(`${rec.name} file ${rec.size} ${h.digest("hex")}`),
      };
    });
    return seen;
  } catch (e) {
    if (e instanceof CairnError) return e.code;
    return `${(e as { code?: string }).code ?? String(e)}`;
  }
}

async function same(path: string, o: Options = {}): Promise<Seen | string> {
  const here = await read(path, true, o);
  const there = await read(path, false, o);
  assert.deepEqual(
    typeof there === "string" ? there : there.members,
    typeof here === "string" ? here : here.members,
    "the inflate thread and the in-thread path agree",
  );
  return there;
}

const big = randomBytes(5 * 1024 * 1024 + 123); // incompressible, spans several 1 MiB chunks on both sides
const tar = writeTar([
  dir("etc"),
  file("etc/motd", "hello\n", { mode: 0o644 }),
  file("etc/empty", ""),
  symlink("etc/link", "motd"),
  file("big", big),
  ...Array.from({ length: 300 }, (_, i) => file(`many/f${i}`, `file ${i}\n`.repeat(i % 50))),
]);
const gz = gzipSync(tar);
const good = stored(gz);

describe("the inflate thread reads a layer exactly as the in-thread path does", () => {
  it("same members, bytes and DiffID; the stored digest and size re-checked", async () => {
    const r = await same(good, { diffId: sha(tar), digest: sha(gz), size: gz.length });
    assert.ok(typeof r !== "string", `read: ${String(r)}`);
    assert.equal(r.members.length, 305);
    assert.ok(r.members.includes(`big file ${big.length} ${sha(big).slice(7)}`));
    assert.ok(r.progress > 0, "progress is reported");
  });

  it("a plain tar (no gzip) the same way", async () => {
    const r = await same(stored(tar), { compression: "none", diffId: sha(tar), digest: sha(tar), size: tar.length });
    assert.ok(typeof r !== "string" && r.members.length === 305, `read: ${String(r)}`);
  });

  it("an empty archive and a layer of one member", async () => {
    for (const t of [writeTar([]), writeTar([file("only", "x")])]) {
      const r = await same(stored(gzipSync(t)), { diffId: sha(t) });
      assert.ok(typeof r !== "string", `read: ${String(r)}`);
    }
  });
});

describe("the inflate thread refuses what the in-thread path refuses, and serves the next layer", () => {
  const control = async (): Promise<void> => {
    const r = await read(good, false, { diffId: sha(tar) });
    assert.ok(typeof r !== "string" && r.members.length === 305, `control after a refusal: ${String(typeof r === "string" ? r : r.members.length)}`);
  };
  const cases: Array<[string, () => { path: string; o?: Options }, string]> = [
    ["a wrong DiffID", () => ({ path: good, o: { diffId: sha(Buffer.from("other")) } }), "OCI_DIFFID_MISMATCH"],
    ["a wrong stored digest", () => ({ path: good, o: { digest: sha(Buffer.from("other")), size: gz.length } }), "DIGEST_MISMATCH"],
    ["a wrong stored size", () => ({ path: good, o: { digest: sha(gz), size: gz.length + 1 } }), "SIZE_MISMATCH"],
    ["gzip cut short", () => ({ path: stored(gz.subarray(0, gz.length >> 1)) }), "TAR_INVALID"],
    ["bytes that are not gzip", () => ({ path: stored(Buffer.from("not a gzip stream at all, just text")) }), "TAR_INVALID"],
    ["a tar cut short inside gzip", () => ({ path: stored(gzipSync(tar.subarray(0, tar.length - 4096))) }), "TAR_INVALID"],
    ["a missing file", () => ({ path: join(work, "absent.tar.gz") }), "ENOENT"],
    [
      "more stored bytes than compressedBytes allows",
      () => ({ path: good, o: { limits: { ...DEFAULT_LIMITS, compressedBytes: 2 * 1024 * 1024 } } }),
      "LIMIT_EXCEEDED",
    ],
    [
      "more expanded bytes than expandedBytes allows",
      () => ({ path: good, o: { limits: { ...DEFAULT_LIMITS, expandedBytes: 3 * 1024 * 1024 } } }),
      "LIMIT_EXCEEDED",
    ],
    [
      "an inflation ratio above its bound (a bomb)",
      () => {
        const zeros = writeTar([file("zeros", Buffer.alloc(64 * 1024 * 1024))]);
        const inflation: InflationBound = { maxBytes: 2 ** 40, maxBytesName: "x", maxRatio: 10, maxRatioName: "ratio", ratioAfter: 1024 * 1024 };
        return { path: stored(gzipSync(zeros)), o: { inflation } };
      },
      "LIMIT_EXCEEDED",
    ],
    ["a member the caller refuses", () => ({ path: good, o: { refuseAt: "many/f7" } }), "TAR_UNSAFE_PATH"],
  ];
  for (const [name, make, code] of cases) {
    it(`${name}: ${code}`, async () => {
      const { path, o } = make();
      assert.equal(await same(path, o), code);
      await control();
    });
  }
});

describe("the copy the inflate thread writes of the stored bytes", () => {
  /** A copy file as a caller makes it: created exclusively, 0600; the caller closes it. */
  const withCopy = async <T>(use: (fd: number, path: string) => Promise<T>): Promise<{ result: T; bytes: Buffer }> => {
    const path = join(work, `copy-${++n}`);
    const fd = createExclusive(path, 0o600);
    try {
      const result = await use(fd, path);
      return { result, bytes: readFileSync(path) };
    } finally {
      closeSync(fd);
    }
  };

  it("holds exactly the stored bytes, for gzip and plain tar", async () => {
    for (const [bytes, compression] of [
      [gz, "gzip"],
      [tar, "none"],
    ] as const) {
      const path = stored(bytes);
      const { result, bytes: copy } = await withCopy((copyFd) =>
        read(path, false, { compression, copyFd, digest: sha(bytes), size: bytes.length, diffId: sha(tar) }),
      );
      assert.ok(typeof result !== "string", `read: ${String(result)}`);
      assert.ok(copy.equals(bytes), `${compression}: the copy is the stored bytes`);
    }
  });

  it("holds only stored bytes, at their offsets, when the read is refused midway; control: the whole read", async () => {
    // 24 MiB that do not compress, refused at its first member: the thread is a few MiB ahead at most
    const longTar = writeTar([file("first", "x"), file("long", randomBytes(24 * 1024 * 1024))]);
    const longGz = gzipSync(longTar, { level: 1 });
    const path = stored(longGz);
    const o = { digest: sha(longGz), size: longGz.length };
    const { result, bytes: copy } = await withCopy((copyFd) => read(path, false, { copyFd, ...o, refuseAt: "first" }));
    assert.equal(result, "TAR_UNSAFE_PATH");
    assert.ok(copy.length < longGz.length, `the thread stopped reading (${copy.length} of ${longGz.length} bytes copied)`);
    assert.ok(copy.equals(longGz.subarray(0, copy.length)), "what was written is a prefix of the stored bytes");
    const whole = await withCopy((copyFd) => read(path, false, { copyFd, ...o }));
    assert.ok(typeof whole.result !== "string" && whole.bytes.equals(longGz), "control: the read without the refusal copies it whole");
  });

  it("needs the stored digest and size re-checked, and the inflate thread", async () => {
    await withCopy(async (copyFd) => {
      assert.equal(await read(good, false, { copyFd }), "USAGE");
      assert.equal(await read(good, true, { digest: sha(gz), size: gz.length, copyFd }), "USAGE");
    });
  });
});
