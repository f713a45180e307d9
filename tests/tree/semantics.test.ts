/**
 * What layer application produces: the conformance layout's exact tree, whiteout
 * and opaque semantics independent of member order, replacement rules, the two
 * opt-in policies, DiffID and stored-digest checks, and a round-trip property.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { describe, it } from "node:test";
import fc from "fast-check";
import { CairnError, parseSha256, sha256 } from "../../src/core/index.ts";
import { applyLayers } from "../../src/tree/index.ts";
import { readOciSource } from "../../src/oci/index.ts";
import { STRICT_POLICY, parsePolicy } from "../../src/tree/layer-policy.ts";
import type { CanonicalTree, ContentSink } from "../../src/tree/entries.ts";
import { assertCode, assertCodeAsync } from "../helpers/errors.ts";
import { layerCompression } from "../../src/oci/media-types.ts";
import { CONFORMANCE_TREE, writeConformanceLayout, type ExpectedEntry } from "../workload/fixtures/conformance.ts";
import { runLayers } from "./fixtures/layer-runner.ts";
import { MemorySink } from "./fixtures/memory-sink.ts";
import { MEDIA } from "../workload/fixtures/oci-writer.ts";
import { dir, file, hardlink, opaque, symlink, whiteout, writeTar, type TarMember } from "../workload/fixtures/tar-writer.ts";

const tmp = (): string => mkdtempSync(join(tmpdir(), "cairn-sem-"));

function flatten(tree: CanonicalTree, sink: MemorySink): ExpectedEntry[] {
  return [...tree.values()].map(
    (e) => [e.path, e.type, e.mode, e.uid, e.gid, e.mtime, e.type === "file" ? sink.text(e.sha256) : e.type === "symlink" ? e.target : ""] as const,
  );
}

describe("conformance layout", () => {
  it("produces exactly the expected tree (modes, owners, mtimes, symlinks, replacement, whiteouts, opaque dirs)", async () => {
    const d = tmp();
    const img = writeConformanceLayout(join(d, "layout"));
    const src = await readOciSource({ layoutDir: join(d, "layout"), manifestDigest: img.manifestDigest, stagingDir: join(d, "staging") });
    const sink = new MemorySink();
    const { tree, stats } = await applyLayers({ layers: src.layers, policy: STRICT_POLICY, sink });
    assert.deepEqual(flatten(tree, sink), CONFORMANCE_TREE);
    assert.equal(stats.layers, 3);
    assert.equal(stats.whiteouts, 3);
    assert.equal(stats.opaques, 1);
    assert.deepEqual(src.launch, { entrypoint: ["/bin/tool"], cmd: ["--serve"], env: ["PATH=/bin", "MODE=test"], workingDir: "/home/user", user: "1000:1000" });
  });

  it("keys are sorted by UTF-8 bytes and no whiteout marker survives", async () => {
    const { tree } = await runLayers([
      [file("b", ""), file("\u00e9", ""), file("Z", ""), file("a\u{1F600}", ""), file("a\uFF5E", "")],
      [whiteout("b"), opaque("")],
    ]);
    const keys = [...tree.keys()];
    const bytes = keys.map((k) => Buffer.from(k));
    assert.deepEqual(
      keys,
      [...bytes].sort(Buffer.compare).map((b) => b.toString()),
    );
    assert.ok(keys.every((k) => !k.includes(".wh.")));
  });
});

describe("whiteouts and opaque directories remove only lower-layer content", () => {
  const base = [dir("d"), file("d/old", "o"), file("d/keep", "k"), dir("e"), file("e/x", "x"), file("gone", "g")];
  const top: TarMember[] = [whiteout("gone"), file("gone", "again"), opaque("d"), file("d/new", "n"), whiteout("e/x"), file("e/y", "y")];

  it("whatever the member order of the upper layer", async () => {
    const expected = flatten((await runLayers([base, top])).tree, (await runLayers([base, top])).sink);
    await fc.assert(
      fc.asyncProperty(fc.shuffledSubarray(top, { minLength: top.length, maxLength: top.length }), async (order) => {
        const r = await runLayers([base, order]);
        assert.deepEqual(flatten(r.tree, r.sink), expected);
      }),
      { numRuns: 25 },
    );
    assert.deepEqual(
      expected.map((e) => e[0]),
      ["/", "/d", "/d/new", "/e", "/e/y", "/gone"],
    );
  });

  it("a whiteout of a directory removes its whole subtree; a whiteout of nothing is a no-op", async () => {
    const r = await runLayers([
      [dir("a"), dir("a/b"), file("a/b/c", "c"), file("z", "z")],
      [whiteout("a"), whiteout("nothing")],
    ]);
    assert.deepEqual([...r.tree.keys()], ["/", "/z"]);
  });
});

describe("replacement", () => {
  it("directory over directory updates attributes and keeps children", async () => {
    const r = await runLayers([[dir("d", { mode: 0o755, mtime: 5 }), file("d/f", "f")], [dir("d", { mode: 0o700, uid: 3, gid: 4, mtime: 9 })]]);
    assert.deepEqual(r.tree.get("/d"), { path: "/d", type: "dir", mode: 0o700, uid: 3, gid: 4, mtime: 9 });
    assert.ok(r.tree.has("/d/f"));
  });
  it("a file over a directory removes the directory's subtree", async () => {
    const r = await runLayers([[dir("d"), file("d/f", "f")], [file("d", "now a file")]]);
    assert.deepEqual([...r.tree.keys()], ["/", "/d"]);
    assert.equal(r.tree.get("/d")?.type, "file");
  });
  it("the root directory's attributes come from a ./ member", async () => {
    const r = await runLayers([[dir("./", { mode: 0o700, mtime: 77 })]]);
    assert.deepEqual(r.tree.get("/"), { path: "/", type: "dir", mode: 0o700, uid: 0, gid: 0, mtime: 77 });
  });
});

describe("policies", () => {
  it("setid: strip clears setuid and setgid and keeps the sticky bit", async () => {
    const r = await runLayers([[file("su", "x", { mode: 0o4755 }), dir("d", { mode: 0o3775 })]], { policy: parsePolicy({ setid: "strip" }) });
    assert.equal(r.tree.get("/su")?.mode, 0o755);
    assert.equal(r.tree.get("/d")?.mode, 0o1775);
    assert.equal(r.stats.setidStripped, 2);
  });
  it("hardlinks: copy makes an independent copy with the target's content and attributes", async () => {
    const r = await runLayers(
      [[dir("bin"), file("bin/a", "AAA", { mode: 0o750, uid: 2, gid: 3, mtime: 11 }), hardlink("bin/b", "bin/a", { mode: 0o644, mtime: 99 })]],
      { policy: parsePolicy({ hardlinks: "copy" }) },
    );
    const a = r.tree.get("/bin/a");
    const b = r.tree.get("/bin/b");
    assert.deepEqual(b, { ...a, path: "/bin/b" });
    assert.equal(r.stats.hardlinksCopied, 1);
  });
  it("a hard link across layers under copy resolves against the tree so far", async () => {
    const r = await runLayers([[file("a", "A")], [hardlink("b", "a")]], { policy: parsePolicy({ hardlinks: "copy" }) });
    assert.equal(r.tree.get("/b")?.type, "file");
  });
});

describe("integrity of each layer", () => {
  it("a DiffID mismatch refuses the layer; the true DiffID passes", async () => {
    const layer = [file("a", "A")];
    await assertCodeAsync(() => runLayers([layer], { diffIds: { 0: `sha256:${"0".repeat(64)}` } }), "OCI_DIFFID_MISMATCH");
    await runLayers([layer]);
  });
  it("corrupt gzip is refused as TAR_INVALID", async () => {
    const good = gzipSync(writeTar([file("a", "A")]));
    const bad = Buffer.from(good);
    bad[bad.length - 6] = bad[bad.length - 6]! ^ 0xff; // the CRC32 trailer
    await assertCodeAsync(() => runLayers([[file("a", "A")]], { stored: { 0: bad } }), "TAR_INVALID");
    await runLayers([[file("a", "A")]], { stored: { 0: good } });
  });
  it("bytes after the gzip stream are TAR_INVALID; zero padding and concatenated members are accepted", async () => {
    const tar = writeTar([file("a", "A")]);
    const gz = gzipSync(tar);
    await assertCodeAsync(() => runLayers([tar], { stored: { 0: Buffer.concat([gz, Buffer.from("garbage!")]) } }), "TAR_INVALID");
    await runLayers([tar], { stored: { 0: Buffer.concat([gz, Buffer.alloc(64)]) } });
    await runLayers([tar], { stored: { 0: Buffer.concat([gzipSync(tar.subarray(0, 512)), gzipSync(tar.subarray(512))]) } });
  });
  it("a gzip bomb stops at expandedBytes without expanding it all", async () => {
    const huge = gzipSync(Buffer.concat([writeTar([file("z", Buffer.alloc(64 * 1024 * 1024))])]));
    const err = await assertCodeAsync(() => runLayers([[]], { stored: { 0: huge }, limits: { expandedBytes: 1024 * 1024 } }), "LIMIT_EXCEEDED");
    assert.match(err.message, /expandedBytes/);
  });
  it("the stored blob is re-hashed with recheckStored", async () => {
    const d = tmp();
    const tar = writeTar([file("a", "A")]);
    const blob = gzipSync(tar);
    const path = join(d, "blob");
    writeFileSync(path, blob);
    const hex = (b: Uint8Array): string => createHash("sha256").update(b).digest("hex");
    const layer = {
      compression: "gzip" as const,
      path,
      diffId: parseSha256(`sha256:${hex(tar)}`),
      digest: parseSha256(`sha256:${hex(blob)}`),
      size: blob.length,
    };
    const wrong = { ...layer, digest: parseSha256(`sha256:${"1".repeat(64)}`) };
    await applyLayers({ layers: [layer], policy: STRICT_POLICY, sink: new MemorySink(), recheckStored: true });
    await applyLayers({ layers: [wrong], policy: STRICT_POLICY, sink: new MemorySink() }); // not rechecked unless asked
    await assertCodeAsync(() => applyLayers({ layers: [wrong], policy: STRICT_POLICY, sink: new MemorySink(), recheckStored: true }), "DIGEST_MISMATCH");
    await assertCodeAsync(
      () => applyLayers({ layers: [{ ...layer, size: blob.length + 1 }], policy: STRICT_POLICY, sink: new MemorySink(), recheckStored: true }),
      "SIZE_MISMATCH",
    );
  });
  it("zstd and unknown layer media types are refused", async () => {
    // Layer application takes a compression; the OCI side maps media types to it and refuses the rest.
    assertCode(() => layerCompression(MEDIA.layerZstd, "/layers/0/mediaType"), "OCI_MEDIA_TYPE");
    assert.equal(layerCompression(MEDIA.layerGzip, "/layers/0/mediaType"), "gzip", "control");
  });
});

describe("progress", () => {
  it("reports running totals per layer, ending at the stats' totals", async () => {
    const d = tmp();
    const tar = writeTar([file("big", Buffer.alloc(3 * 1024 * 1024, 7))]);
    const path = join(d, "l");
    writeFileSync(path, tar);
    const diffId = parseSha256(`sha256:${createHash("sha256").update(tar).digest("hex")}`);
    const seen: { layer: number; compressedBytes: number }[] = [];
    const r = await applyLayers({
      layers: [{ compression: "none" as const, path, diffId, size: tar.length }],
      policy: STRICT_POLICY,
      sink: new MemorySink(),
      onProgress: (p) => seen.push(p),
    });
    assert.ok(seen.length >= 3);
    assert.equal(seen.at(-1)!.compressedBytes, r.stats.compressedBytes);
    assert.ok(seen.every((p, i) => p.layer === 0 && (i === 0 || p.compressedBytes > seen[i - 1]!.compressedBytes)));
  });
});

describe("content sink", () => {
  /** A sink that records each write's size and checks the bytes arrive in order. */
  function recordingSink(): { sink: ContentSink; writes: number[][]; mem: MemorySink } {
    const mem = new MemorySink();
    const writes: number[][] = [];
    return {
      mem,
      writes,
      sink: {
        begin(size) {
          const sizes: number[] = [];
          writes.push(sizes);
          const w = mem.begin(size);
          return {
            write(chunk) {
              sizes.push(chunk.length);
              w.write(chunk);
            },
            end: () => w.end(),
          };
        },
      },
    };
  }

  it("a large member's bytes reach the sink in chunks as they are read, never gathered whole", async () => {
    const d = tmp();
    const big = Buffer.alloc(8 << 20);
    for (let i = 0; i < big.length; i += 4096) big[i] = (i >> 12) % 251;
    const tar = writeTar([file("small", "x"), file("big", big)]);
    const path = join(d, "l");
    writeFileSync(path, gzipSync(tar));
    const diffId = parseSha256(`sha256:${createHash("sha256").update(tar).digest("hex")}`);
    const { sink, writes, mem } = recordingSink();
    const r = await applyLayers({ layers: [{ compression: "gzip" as const, path, diffId }], policy: STRICT_POLICY, sink });
    // control: the one-byte file arrives in one write
    assert.deepEqual(writes[0], [1]);
    const bigWrites = writes[1]!;
    assert.ok(bigWrites.length >= 8, `8 MiB arrive in several chunks (${bigWrites.length})`);
    assert.ok(Math.max(...bigWrites) <= 1 << 20, "no chunk is larger than the reader's 1 MiB");
    assert.equal(
      bigWrites.reduce((a, b) => a + b, 0),
      big.length,
    );
    const e = r.tree.get("/big");
    assert.ok(e?.type === "file" && e.size === big.length && e.sha256 === sha256(big));
    assert.ok(Buffer.from(mem.blobs.get(e.sha256)!).equals(big));
  });

  it("a failing sink refuses the layer with the sink's error", async () => {
    const d = tmp();
    const tar = writeTar(Array.from({ length: 100 }, (_, i) => file(`f${i}`, `content ${i}`)));
    const path = join(d, "l");
    writeFileSync(path, tar);
    const diffId = parseSha256(`sha256:${createHash("sha256").update(tar).digest("hex")}`);
    for (const at of ["write", "end"] as const) {
      let n = 0;
      const sink: ContentSink = {
        begin(size) {
          const w = new MemorySink().begin(size);
          const fail = ++n === 50;
          return {
            write(chunk) {
              if (fail && at === "write") throw new CairnError("IO_ERROR", "disk full");
              w.write(chunk);
            },
            end() {
              if (fail && at === "end") throw new CairnError("IO_ERROR", "disk full");
              return w.end();
            },
          };
        },
      };
      await assert.rejects(applyLayers({ layers: [{ compression: "none" as const, path, diffId }], policy: STRICT_POLICY, sink }), (e: unknown) => {
        assert.ok(e instanceof CairnError && e.code === "IO_ERROR", at);
        return true;
      });
    }
    // control: the same layer into a sink that does not fail
    const ok = await applyLayers({ layers: [{ compression: "none" as const, path, diffId }], policy: STRICT_POLICY, sink: new MemorySink() });
    assert.equal(ok.stats.files, 100);
  });
});

describe("round trip", () => {
  const seg = fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,7}$/).filter((s) => !s.startsWith(".wh.") && s !== "." && s !== "..");
  it("a single layer of distinct paths yields exactly those entries (plus implicit parents)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(
          fc.tuple(seg, seg, fc.integer({ min: 0, max: 0o777 }), fc.integer({ min: 0, max: 65535 }), fc.nat(2 ** 31), fc.string({ maxLength: 40 })),
          { maxLength: 12, selector: (t) => t[0] },
        ),
        async (rows) => {
          const members = rows.map(([a, b, mode, uid, mtime, data]) => file(`${a}/${b}`, data, { mode, uid, gid: uid, mtime }));
          const r = await runLayers([members], { gzip: rows.length % 2 === 0 });
          for (const [a, b, mode, uid, mtime, data] of rows) {
            const e = r.tree.get(`/${a}/${b}`);
            assert.ok(e?.type === "file");
            assert.deepEqual([e.mode, e.uid, e.gid, e.mtime, r.sink.text(e.sha256)], [mode, uid, uid, mtime, data]);
            assert.deepEqual(r.tree.get(`/${a}`), { path: `/${a}`, type: "dir", mode: 0o755, uid: 0, gid: 0, mtime: 0 });
          }
          assert.equal(r.tree.size, 1 + rows.length * 2);
        },
      ),
      { numRuns: 30 },
    );
  });
  it("symlink targets are kept verbatim, relative or absolute", async () => {
    const r = await runLayers([[symlink("a", "/abs/target"), symlink("b", "../../rel"), symlink("c", "x/./y/")]]);
    assert.deepEqual(
      ["/a", "/b", "/c"].map((p) => {
        const e = r.tree.get(p);
        return e?.type === "symlink" ? e.target : undefined;
      }),
      ["/abs/target", "../../rel", "x/./y/"],
    );
  });
});
