// Local features pinned by their directory (--features-dir): the pin is the
// cairn.fs/1 digest of the feature's normalized tree, recomputed here by an
// encoder of the test's own; it sits in cairn's extension, never the
// standard's core; hostile feature directories are refused with typed errors
// naming the path, each next to a control that passes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { chmodSync, mkdirSync, mkdtempSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { manifestExtensionAddress } from "../../src/manifest/index.ts";
import { ingestDevcontainer, type EnvManifest } from "../../src/manifest/env-manifest.ts";
import { parseManifest } from "../../src/manifest/document.ts";
import { checkResume, snapshotRefOf } from "../../src/manifest/resume.ts";
import { FEATURE_DIR_LIMITS, localFeatureDigest } from "../../src/manifest/local-features.ts";
import { runCli } from "../helpers/cli.ts";
import { assertCode } from "../helpers/errors.ts";
import { needsRoot } from "../helpers/prerequisites.ts";
import { PINNED_IMAGE } from "./helpers.ts";

const METADATA = '{ "id": "hello", "version": "1.0.0" }\n';
const INSTALL = "#!/bin/sh\necho hello > /usr/local/share/hello\n";

/** A .devcontainer folder holding devcontainer.json and one local feature `hello` (metadata, install.sh +x, an inner link). */
function project(opts: { umask?: number; mtime?: number } = {}): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), "cairn-localfeat-"));
  const f = join(dir, "hello");
  mkdirSync(join(f, "lib"), { recursive: true });
  writeFileSync(join(f, "devcontainer-feature.json"), METADATA);
  writeFileSync(join(f, "install.sh"), INSTALL);
  chmodSync(join(f, "install.sh"), 0o755 & ~(opts.umask ?? 0));
  writeFileSync(join(f, "lib", "data.txt"), "data\n");
  chmodSync(join(f, "lib", "data.txt"), 0o644 & ~(opts.umask ?? 0));
  symlinkSync("lib/data.txt", join(f, "data-link"));
  if (opts.mtime !== undefined) for (const p of ["install.sh", "lib/data.txt", "devcontainer-feature.json"]) utimesSync(join(f, p), opts.mtime, opts.mtime);
  const file = join(dir, "devcontainer.json");
  writeFileSync(file, JSON.stringify({ image: PINNED_IMAGE, features: { "./hello": {} } }));
  return { dir, file };
}

const decl = (id = "./hello"): object => ({ image: PINNED_IMAGE, features: { [id]: {} } });

/**
 * cairn.fs/1 written from docs/workload.md with node:crypto only (an oracle
 * that shares no code with src/tree): entries sorted by path bytes, owner
 * 0:0, mtime 0, modes as the docs say a feature tree is normalized.
 */
function expectedDigest(entries: { path: string; type: "D" | "F" | "L"; mode: number; data?: string; target?: string }[]): string {
  const str = (s: string): Buffer => {
    const b = Buffer.from(s, "utf8");
    const l = Buffer.alloc(4);
    l.writeUInt32BE(b.length);
    return Buffer.concat([l, b]);
  };
  const sorted = [...entries].sort((a, b) => Buffer.compare(Buffer.from(a.path), Buffer.from(b.path)));
  const h = createHash("sha256");
  h.update(Buffer.from("cairn.fs/1\0"));
  const count = Buffer.alloc(8);
  count.writeBigUInt64BE(BigInt(sorted.length));
  h.update(count);
  for (const e of sorted) {
    const nums = Buffer.alloc(20);
    nums.writeUInt32BE(e.mode, 0);
    h.update(Buffer.concat([Buffer.from(e.type), str(e.path), nums]));
    if (e.type === "F") {
      const size = Buffer.alloc(8);
      size.writeBigUInt64BE(BigInt(Buffer.byteLength(e.data!)));
      h.update(Buffer.concat([size, createHash("sha256").update(e.data!).digest()]));
    } else if (e.type === "L") h.update(str(e.target!));
  }
  return `sha256:${h.digest("hex")}`;
}

const HELLO_DIGEST = expectedDigest([
  { path: "/", type: "D", mode: 0o755 },
  { path: "/devcontainer-feature.json", type: "F", mode: 0o644, data: METADATA },
  { path: "/install.sh", type: "F", mode: 0o755, data: INSTALL },
  { path: "/lib", type: "D", mode: 0o755 },
  { path: "/lib/data.txt", type: "F", mode: 0o644, data: "data\n" },
  { path: "/data-link", type: "L", mode: 0o777, target: "lib/data.txt" },
]);

test("with --features-dir a local feature is pinned by the cairn.fs/1 digest of its directory, recomputed independently; the standard's address does not move", () => {
  const { dir } = project();
  const without = ingestDevcontainer(decl()).manifest;
  const withDir = ingestDevcontainer(decl(), { featuresDir: dir }).manifest;
  // Control: without the directory the feature is unpinned, as before.
  assert.equal(without.pinned, false);
  assert.deepEqual(without.unpinned, ["/features/0/id"]);
  assert.equal(without.extension.local_features, undefined);
  assert.equal(withDir.pinned, true);
  assert.deepEqual(withDir.unpinned, []);
  assert.deepEqual(withDir.extension.local_features, { "./hello": HELLO_DIGEST });
  assert.equal(withDir.address, without.address, "the pin is cairn's claim, never part of the standard's address");
  assert.notEqual(withDir.extension_address, without.extension_address);
  // The oracle can fail: one byte of content, or one execute bit, gives another digest.
  assert.notEqual(HELLO_DIGEST, expectedDigest([{ path: "/", type: "D", mode: 0o755 }]));
});

test("the pin does not depend on the host: umask and mtimes leave no trace; content and the execute bit do", () => {
  const a = project({ umask: 0o022, mtime: 1 });
  const b = project({ umask: 0o077, mtime: 2_000_000_000 });
  const pin = (dir: string): string => ingestDevcontainer(decl(), { featuresDir: dir }).manifest.extension.local_features!["./hello"]!;
  assert.equal(pin(a.dir), HELLO_DIGEST);
  assert.equal(pin(b.dir), HELLO_DIGEST);
  writeFileSync(join(b.dir, "hello", "lib", "data.txt"), "data!\n");
  assert.notEqual(pin(b.dir), HELLO_DIGEST);
  chmodSync(join(a.dir, "hello", "lib", "data.txt"), 0o755);
  assert.notEqual(pin(a.dir), HELLO_DIGEST);
});

test("a symlink inside the feature that leaves it is refused with its path; control: a link inside is kept", () => {
  for (const target of ["/etc/passwd", "../../outside", "lib/../../../x"]) {
    const { dir } = project();
    const link = join(dir, "hello", "lib", "escape");
    symlinkSync(target, link);
    assertCode(() => ingestDevcontainer(decl(), { featuresDir: dir }), "PATH_UNSAFE", link);
  }
  const { dir } = project();
  symlinkSync("../install.sh", join(dir, "hello", "lib", "inside"));
  symlinkSync("lib/../../x", join(dir, "hello", "lib", "inside-too")); // /lib/lib/../../x is /x, inside
  assert.equal(ingestDevcontainer(decl(), { featuresDir: dir }).manifest.pinned, true);
});

test("a feature directory that is a symlink, or reached through one, is refused; control: the real directory", () => {
  const { dir } = project();
  symlinkSync(join(dir, "hello"), join(dir, "linked"));
  assertCode(() => ingestDevcontainer(decl("./linked"), { featuresDir: dir }), "PATH_UNSAFE", join(dir, "linked"));
  symlinkSync("/", join(dir, "root"));
  assertCode(() => ingestDevcontainer(decl("./root/etc"), { featuresDir: dir }), "PATH_UNSAFE", join(dir, "root"));
  assert.equal(ingestDevcontainer(decl("./hello"), { featuresDir: dir }).manifest.pinned, true);
});

test("a special file in the feature is refused (FIFO); control: the same tree without it", () => {
  const { dir } = project();
  assert.equal(ingestDevcontainer(decl(), { featuresDir: dir }).manifest.pinned, true);
  execFileSync("mkfifo", [join(dir, "hello", "fifo")]);
  assertCode(() => ingestDevcontainer(decl(), { featuresDir: dir }), "SOURCE_NOT_REGULAR", join(dir, "hello", "fifo"));
});

// mknod needs root: when not root this is a loud skip, never a case left out silently.
test("a device in the feature is refused; control: the same tree without it", { skip: needsRoot("mknod of a character device") }, () => {
  const d = project().dir;
  assert.equal(ingestDevcontainer(decl(), { featuresDir: d }).manifest.pinned, true);
  execFileSync("mknod", [join(d, "hello", "null"), "c", "1", "3"]);
  assertCode(() => ingestDevcontainer(decl(), { featuresDir: d }), "SOURCE_NOT_REGULAR", join(d, "hello", "null"));
});

test("a huge feature tree is refused by a named limit (features_dir.*); control: the limit's own size passes", () => {
  const { dir } = project();
  // The hello tree has 5 entries below its root.
  const at = (limits: Partial<typeof FEATURE_DIR_LIMITS>): typeof FEATURE_DIR_LIMITS => ({ ...FEATURE_DIR_LIMITS, ...limits });
  assert.equal(ingestDevcontainer(decl(), { featuresDir: dir, featureDirLimits: at({ maxEntries: 5 }) }).manifest.pinned, true);
  const e = assertCode(() => ingestDevcontainer(decl(), { featuresDir: dir, featureDirLimits: at({ maxEntries: 4 }) }), "LIMIT_EXCEEDED");
  assert.match(e.message, /features_dir\.max_entries/);
  const total = METADATA.length + INSTALL.length + "data\n".length;
  assert.equal(localFeatureDigest(join(dir, "hello"), at({ maxTotalBytes: total })), HELLO_DIGEST);
  assert.match(
    assertCode(() => localFeatureDigest(join(dir, "hello"), at({ maxTotalBytes: total - 1 })), "LIMIT_EXCEEDED").message,
    /features_dir\.max_total_bytes/,
  );
  assert.match(
    assertCode(() => localFeatureDigest(join(dir, "hello"), at({ maxFileBytes: INSTALL.length - 1, maxTotalBytes: 1e9 })), "LIMIT_EXCEEDED").message,
    /features_dir\.max_file_bytes/,
  );
  // The defaults are named and bounded.
  assert.ok(FEATURE_DIR_LIMITS.maxEntries <= 10_000 && FEATURE_DIR_LIMITS.maxTotalBytes <= 256 * 1024 * 1024);
});

test("a feature path that climbs out of --features-dir is refused (PATH_UNSAFE, the feature's pointer); control: a path that stays inside", () => {
  const { dir } = project();
  mkdirSync(join(dir, "sub"));
  for (const id of ["../hello", "./sub/../../hello", "./.."]) {
    assertCode(
      () => ingestDevcontainer(decl(id), { featuresDir: join(dir, "sub") }),
      "PATH_UNSAFE",
      `/features/${id.replaceAll("~", "~0").replaceAll("/", "~1")}`,
    );
  }
  // Without --features-dir the same ids are accepted as unpinned, as before.
  assert.equal(ingestDevcontainer(decl("../hello")).manifest.pinned, false);
  const inside = ingestDevcontainer(decl("./sub/../hello"), { featuresDir: dir }).manifest;
  assert.deepEqual(inside.extension.local_features, { "./sub/../hello": HELLO_DIGEST });
});

test("a missing feature directory (IO_ERROR) and a directory that is no feature (MANIFEST_REFUSED) name the path; control: the real feature", () => {
  const { dir } = project();
  assertCode(() => ingestDevcontainer(decl("./absent"), { featuresDir: dir }), "IO_ERROR", join(dir, "absent"));
  mkdirSync(join(dir, "empty"));
  assertCode(() => ingestDevcontainer(decl("./empty"), { featuresDir: dir }), "MANIFEST_REFUSED", join(dir, "empty", "devcontainer-feature.json"));
  assert.equal(ingestDevcontainer(decl(), { featuresDir: dir }).manifest.pinned, true);
});

test("a manifest document keeps its pins: read back equal; pins edited by hand are refused even with the extension address recomputed", () => {
  const { dir } = project();
  const m = ingestDevcontainer(decl(), { featuresDir: dir }).manifest;
  assert.deepEqual(parseManifest(JSON.parse(JSON.stringify(m))), m);
  const edit = (pins: unknown): unknown => {
    const copy = JSON.parse(JSON.stringify(m)) as EnvManifest;
    (copy.extension as { local_features: unknown }).local_features = pins;
    copy.extension_address = manifestExtensionAddress(copy.extension);
    return copy;
  };
  assertCode(() => parseManifest(edit({})), "MANIFEST_MISMATCH", "/extension/local_features");
  assertCode(() => parseManifest(edit({ "./hello": HELLO_DIGEST, "./other": HELLO_DIGEST })), "MANIFEST_MISMATCH", "/extension/local_features");
  assertCode(() => parseManifest(edit({ "./hello": "sha256:ABC" })), "DIGEST_INVALID", "/extension/local_features/.~1hello");
  // Without recomputing the address, the tamper check catches it first.
  const tampered = JSON.parse(JSON.stringify(m)) as EnvManifest;
  tampered.extension.local_features = { "./hello": `sha256:${"0".repeat(64)}` as never };
  assertCode(() => parseManifest(tampered), "MANIFEST_MISMATCH", "/extension_address");
  // A core without local features cannot carry pins.
  const plain = ingestDevcontainer({ image: PINNED_IMAGE }).manifest;
  const withPins = JSON.parse(JSON.stringify(plain)) as EnvManifest;
  withPins.extension.local_features = { "./hello": HELLO_DIGEST as never };
  withPins.extension_address = manifestExtensionAddress(withPins.extension);
  assertCode(() => parseManifest(withPins), "MANIFEST_MISMATCH", "/extension/local_features");
});

test("resume: a pinned local feature resumes as the same environment; a changed byte is a mismatch naming the feature", () => {
  const { dir } = project();
  const snapshot = snapshotRefOf(ingestDevcontainer(decl(), { featuresDir: dir }).manifest);
  assert.equal(checkResume(snapshot, ingestDevcontainer(decl(), { featuresDir: dir }).manifest), "same environment, pinned");
  writeFileSync(join(dir, "hello", "install.sh"), `${INSTALL}# changed\n`);
  const e = assertCode(() => checkResume(snapshot, ingestDevcontainer(decl(), { featuresDir: dir }).manifest), "RESUME_MISMATCH");
  assert.deepEqual(
    e.issues.map((i) => i.path),
    ["/extension/local_features/.~1hello"],
  );
  // Control: without --features-dir the pair is unpinned and refused as such.
  const unpinned = snapshotRefOf(ingestDevcontainer(decl()).manifest);
  assertCode(() => checkResume(unpinned, ingestDevcontainer(decl()).manifest), "RESUME_UNPINNED");
});

test("CLI: ingest, diff and resume-check take --features-dir", async () => {
  const { dir, file } = project();
  const out = join(dir, "env.manifest.json");
  const ingested = await runCli(["manifest", "ingest", file, "--features-dir", dir, "--out", out]);
  assert.equal(ingested.code, 0, ingested.stderr);
  assert.match(ingested.stdout, /pinned {4}yes/);
  assert.match(ingested.stdout, /1 local, pinned by directory/);
  const plain = await runCli(["manifest", "ingest", file, "--json"]);
  assert.equal(JSON.parse(plain.stdout).manifest.pinned, false, "control: without the flag the feature is unpinned");

  assert.equal((await runCli(["manifest", "resume-check", out, file, "--features-dir", dir])).code, 0);
  assert.equal((await runCli(["manifest", "resume-check", out, file])).code, 1, "control: the pins are missing on the offered side");
  const diffSame = await runCli(["manifest", "diff", out, file, "--features-dir", dir, "--json"]);
  assert.equal(diffSame.code, 0, diffSame.stdout);
  assert.equal(JSON.parse(diffSame.stdout).verdict, "equal: same address, pinned");

  writeFileSync(join(dir, "hello", "lib", "data.txt"), "changed\n");
  const resumed = await runCli(["manifest", "resume-check", out, file, "--features-dir", dir, "--json"]);
  assert.equal(resumed.code, 1);
  assert.equal(JSON.parse(resumed.stdout).error.code, "RESUME_MISMATCH");
  const diffChanged = await runCli(["manifest", "diff", out, file, "--features-dir", dir, "--json"]);
  assert.equal(diffChanged.code, 1);
  assert.deepEqual(
    JSON.parse(diffChanged.stdout).differences.map((d: { path: string }) => d.path),
    ["/extension/local_features/.~1hello"],
  );
  const escaped = await runCli(["manifest", "ingest", file, "--features-dir", join(dir, "hello"), "--json"]);
  assert.equal(escaped.code, 1);
  assert.equal(JSON.parse(escaped.stdout).error.code, "IO_ERROR", "the feature is looked up under the given folder");
});
