import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { sha256 } from "../../src/core/index.ts";
import { Store, cleanStaging, defaultStoreDir } from "../../src/store/index.ts";
import { assertCode } from "../helpers/errors.ts";

const fresh = () => join(mkdtempSync(join(tmpdir(), "cairn-store-")), "store");

test("objects are stored by sha256, 0600 in 0700 directories, and read back verified", () => {
  const root = fresh();
  const s = new Store(root);
  const d = s.put("objects", Buffer.from("hello"));
  assert.equal(d, sha256("hello"));
  assert.equal(s.read("objects", d, 100).toString(), "hello");
  assert.equal(statSync(s.pathOf("objects", d)).mode & 0o777, 0o600);
  for (const dir of [root, join(root, "objects"), join(root, "objects", "sha256"), join(root, "derived"), join(root, "staging")]) {
    assert.equal(statSync(dir).mode & 0o777, 0o700, dir);
  }
  s.close();
  assert.deepEqual(readdirSync(join(root, "staging")), []);
});

test("reads refuse missing, corrupt, symlinked and oversized files", () => {
  const s = new Store(fresh());
  const d = s.put("objects", Buffer.from("data"));
  assertCode(() => s.read("objects", sha256("other"), 100), "STORE_MISSING");
  assertCode(() => s.read("objects", d, 2), "LIMIT_EXCEEDED");
  writeFileSync(s.pathOf("objects", d), "DATA");
  assertCode(() => s.read("objects", d, 100), "STORE_CORRUPT");
  const e = sha256("target");
  writeFileSync(join(s.root, "elsewhere"), "target");
  symlinkSync(join(s.root, "elsewhere"), s.pathOf("objects", e));
  assertCode(() => s.read("objects", e, 100), "STORE_CORRUPT");
  assertCode(() => s.require("objects", sha256("nope"), 1), "STORE_MISSING");
  assertCode(() => s.require("objects", d, 99), "STORE_CORRUPT");
});

test("check verifies a stored file as read does, without holding it: the same refusals, and a file over 1 MiB hashed in chunks", () => {
  const s = new Store(fresh());
  const big = Buffer.alloc(3 * 1024 * 1024 + 17, 7);
  const b = s.put("objects", big);
  s.check("objects", b, big.length); // control: a good file passes
  const d = s.put("objects", Buffer.from("data"));
  s.check("objects", d, 100);
  assertCode(() => s.check("objects", sha256("other"), 100), "STORE_MISSING");
  assertCode(() => s.check("objects", d, 2), "LIMIT_EXCEEDED");
  writeFileSync(s.pathOf("objects", d), "DATA");
  assertCode(() => s.check("objects", d, 100), "STORE_CORRUPT");
  big[big.length - 1] = 8;
  writeFileSync(s.pathOf("objects", b), big);
  assertCode(() => s.check("objects", b, big.length), "STORE_CORRUPT");
  const e = sha256("target");
  writeFileSync(join(s.root, "elsewhere"), "target");
  symlinkSync(join(s.root, "elsewhere"), s.pathOf("objects", e));
  assertCode(() => s.check("objects", e, 100), "STORE_CORRUPT");
});

test("put never replaces a verified object, and repairs a corrupt one only when asked", () => {
  const s = new Store(fresh());
  const d = s.put("objects", Buffer.from("abc"));
  const ino = statSync(s.pathOf("objects", d)).ino;
  s.put("objects", Buffer.from("abc"));
  assert.equal(statSync(s.pathOf("objects", d)).ino, ino, "a verified object is left in place");
  writeFileSync(s.pathOf("objects", d), "xyz"); // same size, wrong bytes
  s.put("objects", Buffer.from("abc"));
  assertCode(() => s.read("objects", d, 10), "STORE_CORRUPT"); // control: a plain put trusts the size
  s.put("objects", Buffer.from("abc"), { checkExisting: true });
  assert.equal(s.read("objects", d, 10).toString(), "abc");
});

test("store paths are built only from validated sha256 digests", () => {
  const s = new Store(fresh());
  assertCode(() => s.pathOf("objects", "../../etc/passwd"), "DIGEST_INVALID");
  assertCode(() => s.pathOf("objects", `blake3:${"a".repeat(64)}`), "DIGEST_INVALID");
  assert.ok(s.pathOf("objects", sha256("x")).startsWith(s.root));
});

test("staging leftovers of dead writers are cleaned; live writers' are kept", () => {
  const root = fresh();
  const s = new Store(root);
  const mine = s.stagingDir;
  const tag = basename(mine).split("-")[0]!;
  const dead = join(root, "staging", `${tag}-999999999-${"0".repeat(16)}`);
  mkdirSync(dead);
  writeFileSync(join(dead, "partial"), "x");
  mkdirSync(join(root, "staging", "junk"));
  const foreign = join(root, "staging", `ffffffff-1-${"0".repeat(16)}`);
  mkdirSync(foreign);
  assert.equal(cleanStaging(root), 2);
  assert.ok(existsSync(mine), "this live writer's staging stays");
  assert.ok(!existsSync(dead));
  assert.ok(existsSync(foreign), "another host's fresh staging stays (its pids mean nothing here)");
  assert.equal(cleanStaging(root, Date.now() + 2 * 24 * 3600 * 1000), 1, "…until it is old");
  assert.ok(existsSync(mine));
  s.close();
});

test("default location: --store, then CAIRN_HOME, then XDG_CACHE_HOME, then ~/.cache", () => {
  assert.equal(defaultStoreDir({ CAIRN_HOME: "/c", XDG_CACHE_HOME: "/x", HOME: "/h" }, "/cwd", "s"), "/cwd/s");
  assert.equal(defaultStoreDir({ CAIRN_HOME: "/c", XDG_CACHE_HOME: "/x", HOME: "/h" }, "/cwd"), "/c/store");
  assert.equal(defaultStoreDir({ XDG_CACHE_HOME: "/x", HOME: "/h" }, "/cwd"), "/x/cairn/store");
  assert.equal(defaultStoreDir({ XDG_CACHE_HOME: "rel", HOME: "/h" }, "/cwd"), "/h/.cache/cairn/store");
});
