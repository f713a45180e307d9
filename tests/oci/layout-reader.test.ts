// The OCI layout reader (src/oci/layout-reader.ts) on directories written by
// the test: the code and path of each refusal (a missing layout, a missing
// top file, a missing blobs directory or blob, a symlink where a directory or
// file belongs), exact reads of files larger than one read chunk, a file that
// shrinks or grows against the size it was opened with, digest and size
// mismatches, a copy into a missing directory, and no descriptor left open.
// Each refusal has a control. Written to kill StrykerJS survivors
// (bench/mutation/README.md).
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import type { ErrorCode, Sha256Digest } from "../../src/core/index.ts";
import { copyVerified, openLayoutDir, readVerified, setLayoutOpenHook, type OpenedFile } from "../../src/oci/layout-reader.ts";
import { assertCodeAsync } from "../helpers/errors.ts";

const sha256Hex = (b: Uint8Array): string => createHash("sha256").update(b).digest("hex");
const tempDir = (): string => mkdtempSync(join(tmpdir(), "cairn-layout-reader-"));
const digestOf = (b: Uint8Array): Sha256Digest => `sha256:${sha256Hex(b)}` as Sha256Digest;
const rm = (p: string): void => rmSync(p, { recursive: true });
const openFds = (): number => readdirSync("/proc/self/fd").length;

function layout(blobs: Uint8Array[] = []): string {
  const dir = tempDir();
  writeFileSync(join(dir, "oci-layout"), '{"imageLayoutVersion":"1.0.0"}');
  writeFileSync(join(dir, "index.json"), "{}");
  mkdirSync(join(dir, "blobs", "sha256"), { recursive: true });
  for (const b of blobs) writeFileSync(join(dir, "blobs", "sha256", sha256Hex(b)), b);
  return dir;
}

test("a layout that is missing or not a directory is OCI_INVALID naming it; control: a directory opens", async () => {
  const dir = layout();
  await (await openLayoutDir(dir)).close();
  await assertCodeAsync(() => openLayoutDir(join(dir, "absent")), "OCI_INVALID", join(dir, "absent"));
  await assertCodeAsync(() => openLayoutDir(join(dir, "index.json")), "OCI_INVALID", join(dir, "index.json"));
});

test("a missing top file is OCI_INVALID and a symlinked one SOURCE_NOT_REGULAR, each naming the file; control: the file opens with its locator", async () => {
  const dir = layout();
  const r = await openLayoutDir(dir);
  try {
    const f = await r.openTop("index.json");
    assert.equal(f.locator, join(dir, "index.json"));
    assert.equal(f.size, 2);
    await f.handle.close();
  } finally {
    await r.close();
  }
  const missing = layout();
  writeFileSync(join(missing, "index.json"), "{}");
  const r2 = await openLayoutDir(missing);
  try {
    rmSync(join(missing, "oci-layout"));
    await assertCodeAsync(() => r2.openTop("oci-layout"), "OCI_INVALID", join(missing, "oci-layout"));
    symlinkSync(join(missing, "index.json"), join(missing, "oci-layout"));
    await assertCodeAsync(() => r2.openTop("oci-layout"), "SOURCE_NOT_REGULAR", join(missing, "oci-layout"));
  } finally {
    await r2.close();
  }
});

test("blobs: a missing blobs or blobs/sha256 directory is OCI_MISSING_BLOB at blobs/sha256, a symlinked one SOURCE_NOT_REGULAR at itself, a missing blob OCI_MISSING_BLOB at the caller's path; control: the blob opens", async () => {
  const data = Buffer.from("blob");
  const d = digestOf(data);
  const ok = layout([data]);
  const r = await openLayoutDir(ok);
  try {
    const f = await r.openBlob(d, "/layers/0");
    assert.equal(f.locator, join(ok, "blobs", "sha256", sha256Hex(data)));
    await f.handle.close();
    await assertCodeAsync(() => r.openBlob(digestOf(Buffer.from("other")), "/layers/1"), "OCI_MISSING_BLOB", "/layers/1");
  } finally {
    await r.close();
  }
  const cases: [string, (dir: string) => void, ErrorCode, (dir: string) => string][] = [
    ["no blobs", (dir) => rmSync(join(dir, "blobs"), { recursive: true }), "OCI_MISSING_BLOB", (dir) => join(dir, "blobs", "sha256")],
    ["no sha256", (dir) => rm(join(dir, "blobs", "sha256")), "OCI_MISSING_BLOB", (dir) => join(dir, "blobs", "sha256")],
    [
      "blobs a symlink",
      (dir) => {
        rm(join(dir, "blobs"));
        mkdirSync(join(dir, "real", "sha256"), { recursive: true });
        symlinkSync(join(dir, "real"), join(dir, "blobs"));
      },
      "SOURCE_NOT_REGULAR",
      (dir) => join(dir, "blobs"),
    ],
    [
      "sha256 a symlink",
      (dir) => {
        rm(join(dir, "blobs", "sha256"));
        mkdirSync(join(dir, "real"));
        symlinkSync(join(dir, "real"), join(dir, "blobs", "sha256"));
      },
      "SOURCE_NOT_REGULAR",
      (dir) => join(dir, "blobs", "sha256"),
    ],
    [
      "blob a symlink",
      (dir) => {
        writeFileSync(join(dir, "real"), data);
        symlinkSync(join(dir, "real"), join(dir, "blobs", "sha256", sha256Hex(data)));
      },
      "SOURCE_NOT_REGULAR",
      (dir) => join(dir, "blobs", "sha256", sha256Hex(data)),
    ],
  ];
  for (const [name, plant, code, path] of cases) {
    const dir = layout();
    plant(dir);
    const rr = await openLayoutDir(dir);
    try {
      const e = await assertCodeAsync(() => rr.openBlob(d, "/layers/0"), code);
      assert.equal(e.path, path(dir), name);
    } finally {
      await rr.close();
    }
  }
});

test("close releases every descriptor the reader opened (the layout, blobs, blobs/sha256); control: the count sees an open reader", async () => {
  const data = Buffer.from("blob");
  const dir = layout([data]);
  const before = openFds();
  const r = await openLayoutDir(dir);
  const f = await r.openBlob(digestOf(data), "/b");
  await f.handle.close();
  assert.equal(openFds(), before + 3, "control: the layout, blobs and blobs/sha256 are open");
  await r.close();
  assert.equal(openFds(), before);
});

test("readVerified and copyVerified read exactly the size over several chunks (1.5 MiB), with the digest; control: the bytes", async () => {
  const big = Buffer.alloc(1024 * 1024 + 512 * 1024);
  for (let i = 0; i < big.length; i++) big[i] = (i * 7 + (i >> 12)) & 0xff;
  const d = digestOf(big);
  const dir = layout([big]);
  const r = await openLayoutDir(dir);
  try {
    const out = await readVerified(await r.openBlob(d, "/b"), big.length, d, "/b");
    assert.ok(out.equals(big));
    const dest = join(tempDir(), "copy");
    await copyVerified(await r.openBlob(d, "/b"), big.length, d, dest, "/b");
    assert.ok(readFileSync(dest).equals(big));
  } finally {
    await r.close();
  }
});

test("readVerified: another size is SIZE_MISMATCH, other bytes DIGEST_MISMATCH, each at the caller's path, and the file is closed; control: the right size and digest", async () => {
  const data = Buffer.from("0123456789");
  const dir = layout([data]);
  const r = await openLayoutDir(dir);
  try {
    await (await r.openBlob(digestOf(data), "/b")).handle.close(); // blobs and blobs/sha256 are opened once, on first use
    const before = openFds();
    await assertCodeAsync(async () => readVerified(await r.openBlob(digestOf(data), "/b"), 9, undefined, "/m/size"), "SIZE_MISMATCH", "/m/size");
    await assertCodeAsync(async () => readVerified(await r.openBlob(digestOf(data), "/b"), 10, digestOf(Buffer.from("x")), "/m/d"), "DIGEST_MISMATCH", "/m/d");
    assert.equal(openFds(), before, "the refused files are closed");
    assert.ok((await readVerified(await r.openBlob(digestOf(data), "/b"), 10, digestOf(data), "/m")).equals(data), "control");
    assert.equal(openFds(), before, "and the read one");
  } finally {
    await r.close();
  }
});

test("a file shorter than the size it was opened with (a sysfs attribute, 4096 reported) or longer (also after a first full chunk) is SOURCE_CHANGED at the caller's path; control: a file of its size", async () => {
  const attr = "/sys/devices/system/cpu/online";
  const short: OpenedFile = { handle: await open(attr, "r"), size: 4096, locator: attr };
  await assertCodeAsync(() => readVerified(short, 4096, undefined, "/m/short"), "SOURCE_CHANGED", "/m/short");
  const dir = tempDir();
  writeFileSync(join(dir, "f"), "0123456789");
  const long: OpenedFile = { handle: await open(join(dir, "f"), "r"), size: 5, locator: "f" };
  await assertCodeAsync(() => readVerified(long, 5, undefined, "/m/long"), "SOURCE_CHANGED", "/m/long");
  const bigger = Buffer.alloc(2 * 1024 * 1024, 1);
  writeFileSync(join(dir, "big"), bigger);
  const grewPastChunk: OpenedFile = { handle: await open(join(dir, "big"), "r"), size: 1024 * 1024 + 512 * 1024, locator: "big" };
  await assertCodeAsync(() => readVerified(grewPastChunk, 1024 * 1024 + 512 * 1024, undefined, "/m/grew"), "SOURCE_CHANGED", "/m/grew");
  const exact: OpenedFile = { handle: await open(join(dir, "f"), "r"), size: 10, locator: "f" };
  assert.equal((await readVerified(exact, 10, undefined, "/m")).toString(), "0123456789", "control");
});

test("copyVerified into a missing directory is IO_ERROR naming the destination, leaves nothing and closes the source; control: an existing directory", async () => {
  const data = Buffer.from("0123456789");
  const dir = tempDir();
  writeFileSync(join(dir, "f"), data);
  const before = openFds();
  const src = (): Promise<OpenedFile> => open(join(dir, "f"), "r").then((handle) => ({ handle, size: 10, locator: "f" }));
  await assertCodeAsync(
    async () => copyVerified(await src(), 10, digestOf(data), join(dir, "missing", "copy"), "/c"),
    "IO_ERROR",
    join(dir, "missing", "copy"),
  );
  assert.equal(openFds(), before, "the source is closed");
  await assertCodeAsync(async () => copyVerified(await src(), 10, digestOf(Buffer.from("x")), join(dir, "copy"), "/c"), "DIGEST_MISMATCH", "/c");
  assert.deepEqual(readdirSync(dir), ["f"], "no temporary file left");
  await copyVerified(await src(), 10, digestOf(data), join(dir, "copy"), "/c");
  assert.equal(readFileSync(join(dir, "copy"), "utf8"), "0123456789", "control");
  assert.equal(openFds(), before);
});

test("a file or directory swapped between lstat and open is SOURCE_CHANGED at its locator: another file renamed over it, a symlink, a file for a directory; control: without a swap it opens", async () => {
  const blob = Buffer.from("blob bytes");
  const hex = sha256Hex(blob);
  /** Opens `what` of a fresh layout while `swap` runs (once) between the reader's lstat and open of the path ending in `name`. */
  const attempt = async (name: string, swap: (dir: string) => void, what: (r: Awaited<ReturnType<typeof openLayoutDir>>) => Promise<OpenedFile>) => {
    const dir = layout([blob]);
    let swapped = false;
    setLayoutOpenHook((full) => {
      if (swapped || !full.endsWith(`/${name}`)) return;
      swapped = true;
      swap(dir);
    });
    const r = await openLayoutDir(dir);
    try {
      const f = await what(r);
      await f.handle.close();
    } finally {
      setLayoutOpenHook(undefined);
      await r.close();
    }
    assert.ok(swapped, `the hook ran for ${name}`);
  };
  const top = (r: Awaited<ReturnType<typeof openLayoutDir>>) => r.openTop("index.json");
  const blobOf = (r: Awaited<ReturnType<typeof openLayoutDir>>) => r.openBlob(digestOf(blob), "/layers/0");
  // control: the hook runs and changes nothing, and both open
  await attempt("index.json", () => undefined, top);
  await attempt(hex, () => undefined, blobOf);
  const refused = async (name: string, swap: (dir: string) => void, what: typeof top, at: (dir: string) => string) => {
    let where = "";
    await assertCodeAsync(
      () =>
        attempt(
          name,
          (d) => {
            where = at(d);
            swap(d);
          },
          what,
        ),
      "SOURCE_CHANGED",
    ).then((e) => assert.equal(e.path, where, name));
  };
  // another regular file renamed over it: same type, other inode
  await refused(
    "index.json",
    (d) => {
      writeFileSync(join(d, "other"), "{}");
      renameSync(join(d, "other"), join(d, "index.json"));
    },
    top,
    (d) => join(d, "index.json"),
  );
  // a symlink in its place: O_NOFOLLOW refuses it (ELOOP)
  await refused(
    hex,
    (d) => {
      const p = join(d, "blobs", "sha256", hex);
      renameSync(p, join(d, "moved"));
      symlinkSync(join(d, "moved"), p);
    },
    blobOf,
    (d) => join(d, "blobs", "sha256", hex),
  );
  // a regular file where the blobs directory was: O_DIRECTORY refuses it (ENOTDIR)
  await refused(
    "blobs",
    (d) => {
      renameSync(join(d, "blobs"), join(d, "blobs-moved"));
      writeFileSync(join(d, "blobs"), "not a directory");
    },
    blobOf,
    (d) => `${d}/blobs`,
  );
});

test("an lstat or open refused by permissions (EACCES) is IO_ERROR naming the locator, not a missing file or a swap; control: the same layout readable opens (in a child without the permission-override capabilities)", () => {
  const root = process.getuid?.() === 0;
  /** Gives `path` mode `mode`, owned by nobody when this process is root (whose child below keeps uid 0 but loses the capabilities that pass permission checks). */
  const lock = (path: string, mode: number): void => {
    if (root) chownSync(path, 65534, 65534);
    chmodSync(path, mode);
  };
  const bytes = (s: string): Buffer => Buffer.from(s);
  const dir = layout([bytes("locked blob")]);
  lock(join(dir, "blobs", "sha256"), 0o444); // it may be opened (read) but not searched: lstat of a blob is EACCES
  const noOpen = layout([bytes("unreadable blob")]);
  lock(join(noOpen, "blobs", "sha256", sha256Hex(bytes("unreadable blob"))), 0o000); // lstat works, open is EACCES
  const shut = layout();
  lock(shut, 0o000); // the layout itself cannot be opened
  const readable = layout([bytes("open blob")]);
  const script = join(tempDir(), "child.mts");
  const blobCall = (d: string, content: string): string => `() => blob(${JSON.stringify(d)}, ${JSON.stringify(sha256Hex(bytes(content)))})`;
  writeFileSync(
    script,
    `const { openLayoutDir } = await import(${JSON.stringify(join(PROJECT_ROOT, "src", "oci", "layout-reader.ts"))});
const outcome = async (f) => { try { await f(); return "opened"; } catch (e) { return e.code + " " + e.path; } };
const blob = async (dir, hex) => { const r = await openLayoutDir(dir); try { const f = await r.openBlob("sha256:" + hex, "/layers/0"); await f.handle.close(); } finally { await r.close(); } };
process.stdout.write(JSON.stringify([
  await outcome(${blobCall(dir, "locked blob")}),
  await outcome(${blobCall(noOpen, "unreadable blob")}),
  await outcome(() => openLayoutDir(${JSON.stringify(shut)})),
  await outcome(${blobCall(readable, "open blob")}),
]));
`,
  );
  const dropCaps = root ? ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] : [];
  const argv = [...dropCaps, process.execPath, "--import", "tsx", script];
  const r = spawnSync(argv[0]!, argv.slice(1), { cwd: PROJECT_ROOT, encoding: "utf8", timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr.slice(-600));
  const [lstatDenied, openDenied, layoutDenied, control] = JSON.parse(r.stdout) as string[];
  assert.equal(lstatDenied, `IO_ERROR ${join(dir, "blobs", "sha256", sha256Hex(bytes("locked blob")))}`);
  assert.equal(openDenied, `IO_ERROR ${join(noOpen, "blobs", "sha256", sha256Hex(bytes("unreadable blob")))}`);
  assert.equal(layoutDenied, `IO_ERROR ${shut}`);
  assert.equal(control, "opened");
});
