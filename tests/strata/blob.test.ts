import { test } from "node:test";
import assert from "node:assert/strict";
import { tempDir } from "./fixtures.ts";
import { chmodSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { execFile, execFileSync } from "node:child_process";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { sha256, type Sha256Digest } from "../../src/core/index.ts";
import { buildLayerBlob, readLayerBlobs } from "../../src/strata/index.ts";
import { readDirectory } from "../../src/tree/index.ts";

/** A blob read back through the strict gate: its entries (root left out) with relative paths. */
async function readBack(blob: Uint8Array, expected: { sha256: Sha256Digest; size: number }, where: string) {
  const { tree } = await readLayerBlobs([{ blob, expected, where }]);
  return [...tree.values()].filter((e) => e.path !== "/").map((e) => ({ ...e, path: e.path.slice(1) }));
}
import { assertCode, assertCodeAsync } from "../helpers/errors.ts";
import { outcomeInChild } from "../helpers/in-child.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { needsRoot } from "../helpers/prerequisites.ts";

const FILES: Array<[string, string, number]> = [
  ["b/z.txt", "zed\n", 0o644],
  ["a/run.sh", "#!/bin/sh\necho hi\n", 0o755],
  ["a/ü-ñame.txt", "unicode\n", 0o600],
  ["B/upper", "upper\n", 0o640],
  [`deep/${"d".repeat(90)}/${"f".repeat(90)}.txt`, "long name\n", 0o644],
];

function makeTree(order: number[], umask: number): string {
  const old = process.umask(umask);
  try {
    const root = tempDir("cairn-blob-");
    for (const i of order) {
      const [rel, content, mode] = FILES[i]!;
      mkdirSync(join(root, rel, ".."), { recursive: true });
      writeFileSync(join(root, rel), content);
      chmodSync(join(root, rel), mode & ~umask);
    }
    symlinkSync("../a/run.sh", join(root, "b/link"));
    return root;
  } finally {
    process.umask(old);
  }
}

test("layer blobs are byte-identical across umask and directory creation order", () => {
  const a = buildLayerBlob(readDirectory(makeTree([0, 1, 2, 3, 4], 0o022)));
  const b = buildLayerBlob(readDirectory(makeTree([4, 3, 2, 1, 0], 0o077)));
  const c = buildLayerBlob(readDirectory(makeTree([2, 0, 4, 1, 3], 0o002)));
  assert.equal(a.sha256, b.sha256);
  assert.equal(a.sha256, c.sha256);
  assert.ok(a.blob.equals(b.blob));
  // control: one changed byte of content changes the blob
  const d = makeTree([0, 1, 2, 3, 4], 0o022);
  writeFileSync(join(d, "b/z.txt"), "zee\n");
  assert.notEqual(buildLayerBlob(readDirectory(d)).sha256, a.sha256);
  // control: an execute bit is content too
  const e = makeTree([0, 1, 2, 3, 4], 0o022);
  chmodSync(join(e, "b/z.txt"), 0o755);
  assert.notEqual(buildLayerBlob(readDirectory(e)).sha256, a.sha256);
});

test("the gzip header is fixed: no mtime, no name, OS byte 255", () => {
  const { blob } = buildLayerBlob(readDirectory(makeTree([0, 1, 2, 3, 4], 0o022)));
  assert.equal(blob[0], 0x1f);
  assert.equal(blob[1], 0x8b);
  assert.equal(blob[3], 0, "no FNAME/FCOMMENT/FHCRC flags");
  assert.equal(blob.readUInt32LE(4), 0, "mtime 0");
  assert.equal(blob[9], 0xff, "OS unknown");
});

test("tar entries are sorted by bytes, owned by 0:0 at mtime 0 with normalized modes, and read back", async () => {
  const built = buildLayerBlob(readDirectory(makeTree([0, 1, 2, 3, 4], 0o077)));
  const tar = gunzipSync(built.blob);
  assert.equal(sha256(tar), built.diff_id);
  const entries = await readBack(built.blob, built, "test");
  const paths = entries.map((e) => e.path);
  assert.deepEqual(
    paths,
    [...paths].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y))),
  );
  assert.ok(paths.indexOf("B") < paths.indexOf("a"), "byte order puts uppercase first, whatever the locale");
  const modes = new Map(entries.map((e) => [e.path, e.type === "symlink" ? -1 : e.mode]));
  assert.equal(modes.get("a/run.sh"), 0o755);
  assert.equal(modes.get("a/ü-ñame.txt"), 0o644, "0600 normalizes to 0644: the umask leaves no trace");
  assert.equal(modes.get("a"), 0o755);
  assert.ok(
    paths.some((p) => p.length > 150),
    "a long name survives through PAX",
  );
  const link = entries.find((e) => e.path === "b/link");
  assert.equal(link?.type === "symlink" ? link.target : undefined, "../a/run.sh");
  // Header fields, straight from the bytes: uid, gid, mtime, uname all zero/empty
  for (let off = 0; off + 512 <= tar.length; off += 512) {
    const h = tar.subarray(off, off + 512);
    if (h.every((b) => b === 0)) break;
    if (h.toString("latin1", 257, 262) !== "ustar") continue;
    assert.equal(h.toString("latin1", 108, 115), "0000000");
    assert.equal(h.toString("latin1", 116, 123), "0000000");
    assert.equal(h.toString("latin1", 136, 147), "00000000000");
    assert.equal(h[265], 0, "no user name");
    const size = parseInt(h.toString("latin1", 124, 135), 8);
    off += Math.ceil(size / 512) * 512;
  }
  assert.ok(built.content_manifest.has("/a/run.sh"));
  assert.equal(built.symlinks.get("/b/link"), "../a/run.sh");
});

test("the system tar reads cairn's blobs (independent oracle)", () => {
  const root = makeTree([0, 1, 2, 3, 4], 0o022);
  const built = buildLayerBlob(readDirectory(root));
  const file = join(root, "..", `${root.split("/").pop()}.tgz`);
  writeFileSync(file, built.blob);
  const listing = execFileSync("tar", ["-tzvf", file], { encoding: "utf8", env: { ...process.env, LC_ALL: "C" } });
  assert.match(listing, /root\/root|0\/0/);
  assert.match(listing, /a\/run\.sh/);
  assert.match(listing, /f{90}\.txt/);
});

test("hostile blobs are refused before and while reading; control reads", async () => {
  const built = buildLayerBlob([{ type: "file", path: "x", mode: 0o644, data: Buffer.from("x") }]);
  assert.equal((await readBack(built.blob, built, "ok")).length, 1);
  const tampered = Buffer.from(built.blob);
  tampered[tampered.length - 9]! ^= 1;
  await assertCodeAsync(() => readBack(tampered, built, "t"), "DIGEST_MISMATCH");
  await assertCodeAsync(() => readBack(built.blob, { ...built, size: built.size + 1 }, "t"), "SIZE_MISMATCH");
  const evil = buildLayerBlob([{ type: "file", path: "../escape", mode: 0o644, data: Buffer.from("x") }]);
  await assertCodeAsync(() => readBack(evil.blob, evil, "t"), "TAR_UNSAFE_PATH");
});

/** A special file made by `create` is refused when building, in a child with a timeout; control: the same directory without it. */
function specialFileRefused(kind: string, create: (p: string) => void): void {
  const DIR_SOURCE = new URL("../../src/tree/dir-reader.ts", import.meta.url);
  const root = tempDir("cairn-special-");
  writeFileSync(join(root, "ok"), "ok");
  assert.equal(outcomeInChild(DIR_SOURCE, `m.readDirectory(${JSON.stringify(root)})`), "ok", `control for ${kind}`);
  create(join(root, "special"));
  assert.equal(outcomeInChild(DIR_SOURCE, `m.readDirectory(${JSON.stringify(root)})`), "SOURCE_NOT_REGULAR", kind);
}

test("a socket and a FIFO are each refused when building, in a child with a timeout; control: the same directory without it", () => {
  specialFileRefused("socket", (p) => execFileSync("python3", ["-c", "import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])", p]));
  specialFileRefused("fifo", (p) => execFileSync("mkfifo", [p]));
});

// A character device (null, 1:3) needs root to make: when not root this is a loud skip, never a case left out silently.
test("a device is refused when building, in a child with a timeout; control: the same directory without it", {
  skip: needsRoot("mknod of a character device"),
}, () => {
  specialFileRefused("device", (p) => execFileSync("mknod", [p, "c", "1", "3"]));
});

test("a file named like an OCI whiteout (.wh.*) is refused when building, since reading the blob back would delete instead; control: .whx builds", async () => {
  const bad = tempDir("cairn-blob-wh-");
  mkdirSync(join(bad, "etc"));
  writeFileSync(join(bad, "etc", ".wh.passwd"), "x\n");
  assertCode(() => readDirectory(bad), "TAR_WHITEOUT");
  const good = tempDir("cairn-blob-wh-");
  mkdirSync(join(good, "etc"));
  writeFileSync(join(good, "etc", ".whx.passwd"), "x\n");
  const blob = buildLayerBlob(readDirectory(good));
  const back = await readBack(blob.blob, blob, "control");
  assert.ok(back.some((e) => e.path === "etc/.whx.passwd" && e.type === "file"));
});

test("cairn layer build gives the same blob under another locale, time zone and umask (separate processes)", () => {
  const src = makeTree([0, 1, 2, 3, 4], 0o022);
  const cairn = join(PROJECT_ROOT, "bin", "cairn.js");
  const build = (envExtra: Record<string, string>, umask: string): string => {
    const reg = tempDir("cairn-blob-reg-");
    const out = execFileSync(
      "sh",
      [
        "-c",
        `umask ${umask}; exec "$0" "$@"`,
        process.execPath,
        cairn,
        "layer",
        "build",
        src,
        "--name",
        "t",
        "--version",
        "1",
        "--registry",
        reg,
        "--init-registry",
        "--unsigned",
        "--json",
      ],
      {
        encoding: "utf8",
        env: { ...process.env, ...envExtra },
      },
    );
    return (JSON.parse(out) as { sha256: string }).sha256;
  };
  const a = build({ LC_ALL: "C", TZ: "UTC" }, "022");
  const b = build({ LC_ALL: "tr_TR.UTF-8", LANG: "tr_TR.UTF-8", TZ: "Pacific/Chatham" }, "077");
  assert.equal(a, b);
  assert.equal(a, buildLayerBlob(readDirectory(src)).sha256, "the CLI and the library agree");
});

test("concurrent publishers of the same layer all succeed with one identical result", async () => {
  const src = makeTree([0, 1, 2, 3, 4], 0o022);
  const reg = tempDir("cairn-blob-race-");
  const cairn = join(PROJECT_ROOT, "bin", "cairn.js");
  const key = join(tempDir("cairn-blob-key-"), "k");
  execFileSync(process.execPath, [cairn, "keygen", "--out", key]);
  execFileSync(process.execPath, [
    cairn,
    "layer",
    "build",
    src,
    "--name",
    "seed",
    "--version",
    "1",
    "--registry",
    reg,
    "--init-registry",
    "--key",
    `${key}.key`,
  ]);
  const one = (): Promise<{ code: number; out: string }> =>
    new Promise((resolve) => {
      execFile(
        process.execPath,
        [cairn, "layer", "build", src, "--name", "race", "--version", "1", "--registry", reg, "--key", `${key}.key`, "--json"],
        (err, stdout) => {
          resolve({ code: err ? 1 : 0, out: stdout });
        },
      );
    });
  const results = await Promise.all([one(), one(), one(), one()]);
  assert.deepEqual(
    results.map((r) => r.code),
    [0, 0, 0, 0],
  );
  assert.equal(new Set(results.map((r) => (JSON.parse(r.out) as { envelope_sha256: string }).envelope_sha256)).size, 1);
  const names = readdirSync(join(reg, "layers"));
  // each layer is its seed document and cairn's signature beside it, and nothing else
  assert.deepEqual(
    names.sort(),
    ["race-1-none-noarch.json", "race-1-none-noarch.json.dsse", "seed-1-none-noarch.json", "seed-1-none-noarch.json.dsse"],
    "no temporary file left behind",
  );
});
