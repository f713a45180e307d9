import { test } from "node:test";
import assert from "node:assert/strict";
import { tempDir } from "./fixtures.ts";
import { mkdirSync, symlinkSync, writeFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { writeToyRootfs } from "../../examples/strata/build-registry.ts";
import { baseDigest, glibcVersionFromBytes, parseOsRelease, probeRoot, probedBase } from "../../src/strata/index.ts";
import { directoryView, resolveInRoot, type RootView } from "../../src/tree/index.ts";
import { assertCodeAsync } from "../helpers/errors.ts";

function rootfs(opts: Parameters<typeof writeToyRootfs>[1] = {}): string {
  const dir = tempDir("cairn-rootfs-");
  writeToyRootfs(dir, opts);
  return dir;
}

test("probing a Debian 12 root: name, arch from ELF, glibc from the banner, gcc from /usr/lib/gcc", async () => {
  const r = await probeRoot(directoryView(rootfs()), "x");
  assert.equal(r.name, "debian12");
  assert.equal(r.os_id, "debian");
  assert.equal(r.version_id, "12");
  assert.equal(r.arch, "x86_64");
  assert.equal(r.abi, "gnu");
  assert.deepEqual(
    r.capabilities.map((c) => `${c.name}@${c.version}`),
    ["os:debian@12", "glibc@2.36", "gcc@12"],
  );
});

test("Amazon Linux is spelled al2023; the old libc-X.Y.so name gives the glibc version", async () => {
  const dir = rootfs({ id: "amzn", versionId: "2023" });
  rmSync(join(dir, "usr/lib/x86_64-linux-gnu/libc.so.6"));
  writeFileSync(join(dir, "usr/lib64/libc-2.34.so"), "x");
  symlinkSync("libc-2.34.so", join(dir, "usr/lib64/libc.so.6"));
  const r = await probeRoot(directoryView(dir), "x");
  assert.equal(r.name, "al2023");
  assert.ok(r.capabilities.some((c) => c.name === "glibc" && c.version === "2.34"));
});

test("glibc version from bytes: banner first, else the highest GLIBC_ symbol version", () => {
  assert.equal(glibcVersionFromBytes(Buffer.from("xx GNU C Library stable release version 2.39.\0")), "2.39");
  assert.equal(glibcVersionFromBytes(Buffer.from("GLIBC_2.2.5\0GLIBC_2.34\0GLIBC_2.9\0")), "2.34");
  assert.equal(glibcVersionFromBytes(Buffer.from("nothing here")), undefined);
});

test("os-release parsing handles quotes and ignores junk", () => {
  const m = parseOsRelease("ID=ubuntu\nVERSION_ID=\"24.04\"\n# comment\nNAME='Ubuntu'\ngarbage line\n");
  assert.equal(m.get("ID"), "ubuntu");
  assert.equal(m.get("VERSION_ID"), "24.04");
  assert.equal(m.get("NAME"), "Ubuntu");
});

test("symlinks resolve inside the root: an absolute or ../ link cannot leave it", async () => {
  const dir = rootfs();
  const outside = tempDir("cairn-outside-");
  writeFileSync(join(outside, "os-release"), "ID=evil\nVERSION_ID=1\n");
  rmSync(join(dir, "etc/os-release"));
  symlinkSync(`../../../../../../../..${outside}/os-release`, join(dir, "etc/os-release"));
  // The link is clamped at the root, so it names a path inside the root that does not exist; the probe falls back to /usr/lib/os-release.
  const r = await probeRoot(directoryView(dir), "x");
  assert.equal(r.os_id, "debian");
  // The clamped target does not exist inside the root: "not found", never the outside file.
  const view = directoryView(dir);
  assert.equal(await resolveInRoot((p) => view.lookup(p), "/etc/os-release"), undefined);
  // control: the same kind of link to a path that exists inside the root resolves to it
  symlinkSync("../../../../usr/lib/os-release", join(dir, "etc/os-release2"));
  assert.equal(await resolveInRoot((p) => view.lookup(p), "/etc/os-release2"), "/usr/lib/os-release");
});

test("a symlink loop is a named limit, not a hang", async () => {
  const view: RootView = {
    readFile: async () => undefined,
    lookup: async (p) => (p === "/a" ? { type: "symlink", target: "/b" } : p === "/b" ? { type: "symlink", target: "/a" } : undefined),
    list: async () => undefined,
  };
  await assertCodeAsync(() => resolveInRoot((p) => view.lookup(p), "/a/x"), "LIMIT_EXCEEDED");
});

test("a root without os-release or without a known arch is refused", async () => {
  const empty = tempDir("cairn-empty-");
  await assertCodeAsync(() => probeRoot(directoryView(empty), "x"), "BASE_PROBE_FAILED");
  const noArch = tempDir("cairn-noarch-");
  mkdirSync(join(noArch, "etc"));
  writeFileSync(join(noArch, "etc/os-release"), "ID=debian\nVERSION_ID=12\n");
  await assertCodeAsync(() => probeRoot(directoryView(noArch), "x"), "BASE_PROBE_FAILED");
});

test("the base digest excludes the probe time and the source, and covers every fact", async () => {
  const r = await probeRoot(directoryView(rootfs()), "x");
  const a = probedBase(r, "host", new Date("2020-01-01T00:00:00Z"));
  const b = probedBase(r, "rootfs:/elsewhere", new Date("2026-01-01T00:00:00Z"));
  assert.equal(a.digest, b.digest);
  assert.notEqual(a.probed_at, b.probed_at);
  const older = await probeRoot(directoryView(rootfs({ glibc: "2.31" })), "x");
  assert.notEqual(probedBase(older, "host", new Date()).digest, a.digest, "control: another glibc is another base");
  assert.notEqual(baseDigest({ ...a, image: `sha256:${"a".repeat(64)}` as never }), a.digest, "an image digest is covered");
});

test("a musl root (Alpine-like) has ABI musl and no glibc capability; aarch64 comes from the loader name", async () => {
  const dir = tempDir("cairn-alpine-");
  mkdirSync(join(dir, "etc"), { recursive: true });
  mkdirSync(join(dir, "lib"), { recursive: true });
  writeFileSync(join(dir, "etc/os-release"), 'NAME="Alpine Linux"\nID=alpine\nVERSION_ID=3.20.1\n');
  writeFileSync(join(dir, "lib/ld-musl-aarch64.so.1"), "loader");
  const r = await probeRoot(directoryView(dir), "x");
  assert.equal(r.name, "alpine3");
  assert.equal(r.abi, "musl");
  assert.equal(r.arch, "aarch64");
  assert.ok(!r.capabilities.some((c) => c.name === "glibc"));
});
