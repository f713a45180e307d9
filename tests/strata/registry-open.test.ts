/**
 * The library functions the CLI used to hold: opening registries with their
 * trust (registry-open.ts), the profile file reader (profile-file.ts) and a
 * lockfile's caveats (lockfile-caveats.ts), called the way a library user
 * calls them, with the environment and working directory as arguments.
 * Every refusal has a control that passes on good input.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import {
  defaultRegistryDir,
  lockfileCaveats,
  notActedUpon,
  openRegistries,
  parseProfileText,
  readProfileFile,
  registryPath,
  resolveProfile,
} from "../../src/strata/index.ts";
import { assertCode, assertCodeAsync } from "../helpers/errors.ts";
import { NOW, catalogOf, exampleRegistry, probedExampleBase, tempDir } from "./fixtures.ts";

const ex = exampleRegistry();
const REG_KEY = `keyfile://${ex.root}/registry.pub`;
const LOCK_KEY = `keyfile://${ex.root}/lock.pub`;

test("defaultRegistryDir: $CAIRN_HOME/registry, else $XDG_DATA_HOME/cairn/registry, else ~/.local/share/cairn/registry", () => {
  assert.equal(defaultRegistryDir({ CAIRN_HOME: "ch", XDG_DATA_HOME: "/xdg", HOME: "/h" }, "/cwd"), "/cwd/ch/registry");
  assert.equal(defaultRegistryDir({ XDG_DATA_HOME: "/xdg", HOME: "/h" }, "/cwd"), "/xdg/cairn/registry");
  assert.equal(defaultRegistryDir({ HOME: "/h" }, "/cwd"), "/h/.local/share/cairn/registry");
});

test("registryPath: a path relative to its base or a file:// URL; a remote URL is refused", () => {
  assert.equal(registryPath("reg", "/base"), "/base/reg"); // control
  assert.equal(registryPath("/abs/reg", "/base"), "/abs/reg");
  assert.equal(registryPath(pathToFileURL("/abs/reg").href, "/base"), "/abs/reg");
  assertCode(() => registryPath("https://example.com/reg", "/base"), "REGISTRY_INVALID");
});

test("openRegistries: the caller's registries get the caller's keys plus the profile's key for the same directory only", async () => {
  const profile = parseProfileText(`name: p\nbase: {os: debian12}\nregistries:\n  - {url: ./registry, trust: "${LOCK_KEY}"}\n`);
  const env = { HOME: "/nonexistent" };
  const same = await openRegistries({ env, cwd: ex.root, registries: [ex.registry], trust: [REG_KEY], profile, profileDir: ex.root });
  assert.equal(same.length, 1);
  assert.deepEqual(
    same[0]!.source.keys.map((k) => k.keyId),
    [ex.registryKey.keyId, ex.lockKey.keyId],
  );
  const other = tempDir("cairn-regopen-");
  const elsewhere = await openRegistries({ env, cwd: ex.root, registries: [ex.registry], trust: [REG_KEY], profile, profileDir: other });
  assert.deepEqual(
    elsewhere[0]!.source.keys.map((k) => k.keyId),
    [ex.registryKey.keyId],
    "the profile names another directory: its key is not added",
  );
});

test("openRegistries: without registries from the caller the profile's own are used, with only the profile's keys", async () => {
  const profile = parseProfileText(`name: p\nbase: {os: debian12}\nregistries:\n  - {url: ./registry, trust: "keyfile://registry.pub"}\n`);
  const opened = await openRegistries({ env: { HOME: "/nonexistent" }, cwd: "/", registries: [], trust: [LOCK_KEY], profile, profileDir: ex.root });
  assert.equal(opened.length, 1);
  assert.equal(opened[0]!.source.url, "./registry");
  assert.deepEqual(
    opened[0]!.source.keys.map((k) => k.keyId),
    [ex.registryKey.keyId],
  );
});

test("openRegistries: with nothing named the default registry is opened, trusting only the caller's keys (trust is never defaulted)", async () => {
  const home = tempDir("cairn-regopen-home-");
  mkdirSync(join(home, "cairn"));
  await assertCodeAsync(() => openRegistries({ env: { CAIRN_HOME: join(home, "cairn") }, cwd: "/", registries: [], trust: [] }), "REGISTRY_INVALID");
  const opened = await openRegistries({ env: { CAIRN_HOME: ex.root }, cwd: "/", registries: [], trust: [] }); // control: $CAIRN_HOME/registry exists
  assert.equal(opened[0]!.source.url, ex.registry);
  assert.deepEqual(opened[0]!.source.keys, []);
  const trusted = await openRegistries({ env: { CAIRN_HOME: ex.root }, cwd: ex.root, registries: [], trust: ["keyfile://registry.pub"] });
  assert.deepEqual(
    trusted[0]!.source.keys.map((k) => k.keyId),
    [ex.registryKey.keyId],
  );
});

test("readProfileFile reads a regular file and refuses a directory; notActedUpon names the recorded-only fields", () => {
  const dir = tempDir("cairn-profile-file-");
  const p = join(dir, "p.yaml");
  writeFileSync(p, "name: p\nbase: {os: debian12}\ninstance: {type: big}\n");
  const profile = readProfileFile(p); // control
  assert.equal(profile.name, "p");
  assert.deepEqual(notActedUpon(profile), ["instance"]);
  assertCode(() => readProfileFile(dir), "IO_ERROR");
});

test("lockfileCaveats: a declared base is a caveat, a probed one is not", async () => {
  const profile = parseProfileText("name: p\nbase: {os: debian12}\nsoftware: [tool-a]\n");
  const common = { profile, catalog: catalogOf(ex), allowUnsignedOffline: false, now: NOW, cairnVersion: "t" };
  const declared = lockfileCaveats(resolveProfile(common));
  assert.ok(
    declared.some((c) => c.startsWith("the base was declared")),
    declared.join("\n"),
  );
  const probed = lockfileCaveats(resolveProfile({ ...common, probedBase: await probedExampleBase(ex) })); // control
  assert.ok(!probed.some((c) => c.startsWith("the base was declared")), probed.join("\n"));
});
