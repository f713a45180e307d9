// `cairn update PROFILE --lock LOCK` (issue 32, item 6, I32-6d): re-resolve and
// show what would change against the existing lockfile, as `uv lock --upgrade
// --dry-run` does; write only with --write (atomically, re-signed with --sign;
// an unsigned lock over a signed one is refused unless --unsigned says so).
// Exit 0 nothing changes, 1 changes, 2 trouble, like `lock diff`.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildLayerFromDirectory, LocalRegistry, readLockfile } from "../../src/strata/index.ts";
import { TOY_LAYERS, toySpec } from "../../examples/strata/build-registry.ts";
import { readVerifyingKey } from "../../src/core/index.ts";
import { runCli } from "../helpers/cli.ts";
import { exampleRegistry, tempDir } from "./fixtures.ts";

// The example's keys and rootfs, and a registry of our own that starts with python 3.11.9 only.
const ex = exampleRegistry();
const layer = (name: string, version: string) => TOY_LAYERS.find((l) => l.name === name && l.version === version)!;

function freshRegistry(): string {
  const dir = join(tempDir("cairn-update-"), "registry");
  const reg = LocalRegistry.init(dir);
  publish(reg, "python", "3.11.9");
  publish(reg, "tool-a", "1.0");
  publish(reg, "tool-b", "1.0");
  return dir;
}

function publish(reg: LocalRegistry, name: string, version: string): void {
  const built = buildLayerFromDirectory(join(ex.root, "src", `${name}-${version}`), toySpec(layer(name, version)));
  reg.publishLayer(built.blob.blob, built.manifest, [ex.registryKey]);
}

const PROFILE_V1 = "name: upd\nbase: {os: debian12, arch: x86_64}\nsoftware:\n  - python\n  - tool-a\nenv:\n  A: secret-one\n";
const PROFILE_V2 =
  "name: upd\nbase: {os: debian12, arch: x86_64}\nsoftware:\n  - python\n  - tool-b\nenv:\n  A: secret-two\npackages:\n  - manager: pip\n    packages:\n      - name: pandas\n";

function profile(dir: string, text: string): string {
  const p = join(dir, "profile.yaml");
  writeFileSync(p, text);
  return p;
}

const env = (now: string): NodeJS.ProcessEnv => ({ ...process.env, CAIRN_NOW: now });
const T1 = "2026-03-01T12:00:00.000Z";
const T2 = "2026-04-01T12:00:00.000Z";

function common(registry: string): string[] {
  return ["--registry", registry, "--trust", `keyfile://${ex.root}/registry.pub`, "--base", `rootfs:${ex.rootfs}`];
}

async function resolved(sign: boolean): Promise<{ dir: string; registry: string; lock: string; p: string }> {
  const registry = freshRegistry();
  const dir = tempDir("cairn-update-w-");
  const p = profile(dir, PROFILE_V1);
  const lock = join(dir, "env.lock");
  const r = await runCli(["resolve", p, ...common(registry), ...(sign ? ["--sign", join(ex.root, "lock.key")] : []), "--out", lock], env(T1));
  assert.equal(r.code, 0, r.stderr);
  return { dir, registry, lock, p };
}

interface PlanJson {
  changed: boolean;
  written: boolean;
  layers: {
    added: { name: string; version: string }[];
    removed: { name: string; version: string }[];
    upgraded: { name: string; from: string; to: string }[];
    downgraded: { name: string; from: string; to: string }[];
  };
  base: { path: string }[];
  packages: { path: string; change: string }[];
  other: { path: string; a?: string; b?: string }[];
}

test("control: right after resolve, update at a later time finds nothing to change (exit 0) and writes nothing", async () => {
  const w = await resolved(true);
  const before = readFileSync(w.lock);
  const r = await runCli(["update", w.p, "--lock", w.lock, ...common(w.registry), "--write", "--sign", join(ex.root, "lock.key")], env(T2));
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /up to date/);
  assert.deepEqual(readFileSync(w.lock), before, "resolved_at alone is no reason to rewrite");
});

test("a new version in the registry and an edited profile: update shows upgrades, additions, removals, package and env changes, and writes nothing (exit 1)", async () => {
  const w = await resolved(true);
  publish(LocalRegistry.open(w.registry), "python", "3.12.4");
  profile(w.dir, PROFILE_V2);
  const lockBytes = readFileSync(w.lock);
  const sigBytes = readFileSync(`${w.lock}.dsse.json`);
  const r = await runCli(["update", w.p, "--lock", w.lock, ...common(w.registry)], env(T2));
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stdout, /^ {2}~ python 3\.11\.9 → 3\.12\.4 \(upgrade\)$/m);
  assert.match(r.stdout, /^ {2}\+ tool-b 1\.0$/m);
  assert.match(r.stdout, /^ {2}- tool-a 1\.0$/m);
  assert.match(r.stdout, /packages/);
  assert.match(r.stdout, /\/env\/A/);
  assert.doesNotMatch(r.stdout, /secret-(one|two)/, "env values are never shown");
  assert.match(r.stdout, /not written: pass --write/);
  assert.deepEqual(readFileSync(w.lock), lockBytes, "a dry run leaves the lockfile alone");
  assert.deepEqual(readFileSync(`${w.lock}.dsse.json`), sigBytes, "and its signature");
  const j = await runCli(["update", w.p, "--lock", w.lock, ...common(w.registry), "--json"], env(T2));
  assert.equal(j.code, 1);
  const plan = JSON.parse(j.stdout) as PlanJson;
  assert.equal(plan.changed, true);
  assert.equal(plan.written, false);
  assert.deepEqual(plan.layers.upgraded, [{ name: "python", from: "3.11.9", to: "3.12.4" }]);
  assert.deepEqual(plan.layers.added, [{ name: "tool-b", version: "1.0" }]);
  assert.deepEqual(plan.layers.removed, [{ name: "tool-a", version: "1.0" }]);
  assert.ok(
    plan.packages.some((c) => c.path === "/packages/pip/packages/pandas" && c.change === "added"),
    "one change per package",
  );
  assert.ok(!plan.other.some((c) => c.path === "/resolved_at"), "resolved_at is not a change");
  assert.deepEqual(
    plan.other.find((c) => c.path === "/env/A"),
    { path: "/env/A", change: "changed", a: "(value hidden)", b: "(value hidden)" },
  );
});

test("a pin back to an older version is a downgrade; dropping --base shows the base change", async () => {
  const w = await resolved(true);
  publish(LocalRegistry.open(w.registry), "python", "3.12.4");
  const up = await runCli(["update", w.p, "--lock", w.lock, ...common(w.registry), "--write", "--sign", join(ex.root, "lock.key")], env(T2));
  assert.equal(up.code, 1, up.stderr);
  profile(w.dir, PROFILE_V1.replace("  - python\n", "  - python@3.11\n"));
  const down = await runCli(["update", w.p, "--lock", w.lock, ...common(w.registry), "--json"], env(T2));
  assert.deepEqual((JSON.parse(down.stdout) as PlanJson).layers.downgraded, [{ name: "python", from: "3.12.4", to: "3.11.9" }]);
  // python needs glibc, which a declared (unprobed) base does not provide: a profile of tools only
  profile(w.dir, "name: upd\nbase: {os: debian12, arch: x86_64}\nsoftware:\n  - tool-a\n");
  const probed = await runCli(["update", w.p, "--lock", w.lock, ...common(w.registry), "--json"], env(T2));
  assert.deepEqual((JSON.parse(probed.stdout) as PlanJson).base, [], "control: the same probed base");
  const declared = await runCli(["update", w.p, "--lock", w.lock, "--registry", w.registry, "--trust", `keyfile://${ex.root}/registry.pub`, "--json"], env(T2));
  assert.equal(declared.code, 1, declared.stderr);
  const plan = JSON.parse(declared.stdout) as PlanJson;
  assert.ok(
    plan.base.some((c) => c.path === "/base/digest"),
    JSON.stringify(plan.base),
  );
});

test("--write replaces the lockfile atomically, re-signed with --sign; the result is what resolve writes and update then finds nothing", async () => {
  const w = await resolved(true);
  publish(LocalRegistry.open(w.registry), "python", "3.12.4");
  const r = await runCli(["update", w.p, "--lock", w.lock, ...common(w.registry), "--write", "--sign", join(ex.root, "lock.key")], env(T2));
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stdout, /wrote .*env\.lock and .*env\.lock\.dsse\.json \(signed by sha256:/);
  const read = readLockfile(w.lock, [readVerifyingKey(join(ex.root, "lock.pub"))]);
  assert.equal(read.lock.layers.find((l) => l.name === "python")?.version, "3.12.4");
  // the same resolution through resolve gives the same bytes
  const again = join(w.dir, "again.lock");
  const rr = await runCli(["resolve", w.p, ...common(w.registry), "--out", again], env(T2));
  assert.equal(rr.code, 0, rr.stderr);
  assert.deepEqual(readFileSync(again), readFileSync(w.lock));
  const after = await runCli(["update", w.p, "--lock", w.lock, ...common(w.registry)], env(T2));
  assert.equal(after.code, 0, after.stdout);
});

test("an unsigned lockfile is never written over a signed one without saying so: refused (exit 2) unless --unsigned; an unsigned one is simply replaced", async () => {
  const w = await resolved(true);
  publish(LocalRegistry.open(w.registry), "python", "3.12.4");
  const lockBytes = readFileSync(w.lock);
  const r = await runCli(["update", w.p, "--lock", w.lock, ...common(w.registry), "--write", "--json"], env(T2));
  assert.equal(r.code, 2, r.stdout);
  const e = (JSON.parse(r.stdout) as { error: { code: string; message: string; path: string } }).error;
  assert.equal(e.code, "USAGE");
  assert.match(e.message, /signed/);
  assert.match(e.message, /--sign/);
  assert.deepEqual(readFileSync(w.lock), lockBytes, "nothing written");
  assert.ok(existsSync(`${w.lock}.dsse.json`));
  const u = await runCli(["update", w.p, "--lock", w.lock, ...common(w.registry), "--write", "--unsigned"], env(T2));
  assert.equal(u.code, 1, u.stderr);
  assert.match(u.stdout, /unsigned/);
  assert.ok(!existsSync(`${w.lock}.dsse.json`), "the old signature does not stay beside new bytes");
  // control: an unsigned lockfile is replaced by --write alone
  const w2 = await resolved(false);
  publish(LocalRegistry.open(w2.registry), "python", "3.12.4");
  const plain = await runCli(["update", w2.p, "--lock", w2.lock, ...common(w2.registry), "--write"], env(T2));
  assert.equal(plain.code, 1, plain.stderr);
  assert.equal(readLockfile(w2.lock).lock.layers.find((l) => l.name === "python")?.version, "3.12.4");
  const both = await runCli(["update", w2.p, "--lock", w2.lock, ...common(w2.registry), "--write", "--unsigned", "--sign", join(ex.root, "lock.key")], env(T2));
  assert.equal(both.code, 2, "--sign and --unsigned together are a usage error");
});

test("trouble is exit 2: a missing lockfile, a lockfile that breaks a rule (shown with its problems, not written over), a profile that does not resolve", async () => {
  const w = await resolved(true);
  const missing = await runCli(["update", w.p, "--lock", join(w.dir, "nope.lock"), ...common(w.registry), "--json"], env(T2));
  assert.equal(missing.code, 2);
  assert.equal((JSON.parse(missing.stdout) as { error: { code: string } }).error.code, "IO_ERROR");
  // a duplicated mount order: parsed, but Validate finds a problem
  const text = readFileSync(w.lock, "utf8");
  const bad = join(w.dir, "bad.lock");
  const orders = [...text.matchAll(/mount_order: (\d+)\n/g)].map((m) => m[0]);
  assert.ok(orders.length >= 2 && orders[0] !== orders[1], "two layers, two mount orders");
  const badText = text.replace(orders[1]!, orders[0]!);
  writeFileSync(bad, badText);
  const r = await runCli(["update", w.p, "--lock", bad, ...common(w.registry), "--write"], env(T2));
  assert.equal(r.code, 2, r.stdout);
  assert.match(r.stdout, /^! /m, "the problem is shown");
  assert.equal(readFileSync(bad, "utf8"), badText, "not written over");
  mkdirSync(join(w.dir, "p2"));
  const unresolvable = profile(join(w.dir, "p2"), PROFILE_V1.replace("tool-a", "no-such-layer"));
  const u = await runCli(["update", unresolvable, "--lock", w.lock, ...common(w.registry)], env(T2));
  assert.equal(u.code, 2, u.stdout + u.stderr);
});

test("fields lock diff does not compare are not hidden: a lockfile from another cairn version is up to date (exit 0) and the output names cairn_version as differing, unwritten", async () => {
  const w = await resolved(true);
  const text = readFileSync(w.lock, "utf8");
  // the tool-version field (cairn_version, or strata_version as Strata's LockFile names it)
  const m = /^(cairn_version|strata_version): (.+)$/m.exec(text);
  assert.ok(m, "the lockfile records the version of the tool that resolved it");
  const field = m[1]!;
  const old = join(w.dir, "old.lock");
  writeFileSync(old, text.replace(m[0], `${field}: 0.0.1-old`));
  const r = await runCli(["update", w.p, "--lock", old, ...common(w.registry), "--json"], env(T2));
  assert.equal(r.code, 0, r.stdout);
  const plan = JSON.parse(r.stdout) as PlanJson & { unlisted: string[] };
  assert.deepEqual(plan.unlisted, [field]);
  const t = await runCli(["update", w.p, "--lock", old, ...common(w.registry)], env(T2));
  assert.match(t.stdout, new RegExp(`also differ.*${field}`));
  assert.doesNotMatch(t.stdout, /changes nothing but resolved_at/, "never claims more than was compared");
  // control: the lockfile as resolve wrote it differs in nothing
  const same = await runCli(["update", w.p, "--lock", w.lock, ...common(w.registry), "--json"], env(T2));
  assert.deepEqual((JSON.parse(same.stdout) as { unlisted: string[] }).unlisted, []);
});
