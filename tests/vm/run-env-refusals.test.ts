/**
 * `cairn run LOCK --env KEY=VAL` (issue 32, item 6): what is refused before
 * anything runs (no kit is set up, no run directory appears): a KEY that is
 * not a POSIX name, an entry without `=`, a KEY given twice, a NUL in a
 * value (the message names the KEY, never the value), more entries than
 * `run.env_count` or one longer than `run.env_entry_bytes`; `--env` beside a
 * workload spec or a spec naming a lockfile. Each refusal has a control: the
 * same command with the entry fixed gets past the check (to the lockfile's
 * signature check, here refused with another key, so nothing runs).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCli } from "../helpers/cli.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { exampleRegistry, resolveArgs, tempDir } from "../strata/fixtures.ts";
import { RUN_ENV_LIMITS } from "../../src/core/index.ts";
import { parseEnvAssignments } from "../../src/vm/index.ts";
import { LAUNCH_LIMITS } from "../../src/workload/launch.ts";

const ex = exampleRegistry();
const LOCK = join(ex.root, "env.lock");
const home = tempDir("cairn-run-env-home-");
const env = { ...process.env, CAIRN_NOW: "2026-03-01T12:00:00.000Z", CAIRN_HOME: home, CAIRN_KIT: join(home, "no-kit") };
const resolved = await runCli(resolveArgs(ex, join(PROJECT_ROOT, "examples/strata/profile.yaml"), LOCK), env);
assert.equal(resolved.code, 0, resolved.stderr);

/** `cairn run LOCK --env …` verified with the registry's key (not the lockfile's): past the --env checks it stops at SIGNATURE_INVALID. */
async function runWith(envFlags: string[], input = LOCK): Promise<{ code: string; path: string; message: string }> {
  const args = ["run", input, "--pub", join(ex.root, "registry.pub"), "--registry", ex.registry, "--base", `rootfs:${ex.rootfs}`];
  const r = await runCli([...args, ...envFlags.flatMap((e) => ["--env", e]), ...(input === LOCK ? ["--cmd", "/bin/true"] : []), "--json"], env);
  assert.notEqual(r.code, 0);
  const { code, path, message } = (JSON.parse(r.stdout) as { error: { code: string; path: string; message: string } }).error;
  return { code, path, message };
}

test("a malformed KEY, a missing =, a duplicate KEY and a NUL in a value are refused naming --env (the value never shown); controls get past", async () => {
  for (const bad of ["1X=a", "A-B=a", "A B=a", "=a", "É=a", "NOEQUALS"]) {
    const e = await runWith([bad]);
    assert.deepEqual([e.code, e.path], ["LAUNCH_INVALID", "--env"], bad);
  }
  const dup = await runWith(["A=1", "B=2", "A=3"]);
  assert.deepEqual([dup.code, dup.path], ["LAUNCH_INVALID", "--env"]);
  assert.match(dup.message, /\bA\b/);
  const nul = await runWith(["SECRET=abc\0hidden-value"]);
  assert.deepEqual([nul.code, nul.path], ["LAUNCH_INVALID", "--env"]);
  assert.match(nul.message, /SECRET/);
  assert.doesNotMatch(nul.message, /hidden-value|abc/, "the value is never shown");
  // a lone surrogate (a library caller's string; argv cannot carry one) has no UTF-8 form the guest could be given
  const lone = await runWith(["HALF=x\ud800y"]);
  assert.deepEqual([lone.code, lone.path], ["LAUNCH_INVALID", "--env"]);
  assert.match(lone.message, /HALF/);
  // controls: POSIX names (letters, digits after the first, underscores), an empty value, = inside a value
  const ok = await runWith(["_A=1", "b2=", "LC_ALL=C", "X==y=z", "U=\u00e9\u{1f600}"]);
  assert.equal(ok.code, "SIGNATURE_INVALID", "past the --env checks");
});

test("run.env_count and run.env_entry_bytes are named when exceeded (controls: at the limit)", async () => {
  const many = Array.from({ length: RUN_ENV_LIMITS["run.env_count"] + 1 }, (_, i) => `V${i}=x`);
  const count = await runWith(many);
  assert.deepEqual([count.code, count.path], ["LIMIT_EXCEEDED", "--env"]);
  assert.match(count.message, /run\.env_count/);
  assert.equal((await runWith(many.slice(1))).code, "SIGNATURE_INVALID");
  const long = `L=${"x".repeat(RUN_ENV_LIMITS["run.env_entry_bytes"] - 1)}`;
  const bytes = await runWith([long]);
  assert.deepEqual([bytes.code, bytes.path], ["LIMIT_EXCEEDED", "--env"]);
  assert.match(bytes.message, /run\.env_entry_bytes/);
  assert.equal((await runWith([`L=${"x".repeat(RUN_ENV_LIMITS["run.env_entry_bytes"] - 2)}`])).code, "SIGNATURE_INVALID", "exactly at the limit");
  // the library parser, the same rules
  assert.deepEqual(
    [...parseEnvAssignments(["A=1", "B=x=y"], "--env")],
    [
      ["A", "1"],
      ["B", "x=y"],
    ],
  );
});

test("--env is for a lockfile given directly: beside a workload spec, or a spec naming a lockfile (which has source.lockfile.env), it is USAGE", async () => {
  const dir = tempDir("cairn-run-env-spec-");
  const spec = join(dir, "spec.yaml");
  writeFileSync(spec, "schema: cairn.workload/1\nsource:\n  lockfile:\n    path: ./env.lock\n    cmd: [/bin/true]\n");
  writeFileSync(join(dir, "env.lock"), "");
  const r = await runWith(["A=1"], spec);
  assert.deepEqual([r.code, r.path], ["USAGE", "--env"]);
  // a spec naming the lockfile sets variables in source.lockfile.env, by the same rules, named at that field
  const envSpec = (envYaml: string): string => {
    const f = join(dir, `env-${Math.random().toString(16).slice(2)}.yaml`);
    writeFileSync(f, `schema: cairn.workload/1\nsource:\n  lockfile:\n    path: ./lock.lock\n    cmd: [/bin/true]\n    env: ${envYaml}\n`);
    return f;
  };
  copyFileSync(LOCK, join(dir, "lock.lock"));
  copyFileSync(`${LOCK}.dsse.json`, join(dir, "lock.lock.dsse.json"));
  const badSpec = await runWith([], envSpec('{"1X": a}'));
  assert.deepEqual([badSpec.code, badSpec.path], ["LAUNCH_INVALID", "/source/lockfile/env"]);
  const nulSpec = await runWith([], envSpec('{S: "a\\0b"}'));
  assert.deepEqual([nulSpec.code, nulSpec.path], ["LAUNCH_INVALID", "/source/lockfile/env"]);
  assert.equal((await runWith([], envSpec("{GREETING: hi}"))).code, "SIGNATURE_INVALID", "control: past the checks");
  const wspec = join(dir, "w.yaml");
  writeFileSync(wspec, "schema: cairn.workload/1\nsource:\n  binary: {path: ./prog, user: '1000:1000'}\n");
  const w = await runWith(["A=1"], wspec);
  assert.deepEqual([w.code, w.path], ["USAGE", "--env"]);
  assert.equal(existsSync(join(home, "runs")) && readdirSync(join(home, "runs")).length > 0, false, "no run directory");
  assert.equal(existsSync(join(home, "no-kit")), false, "no kit was set up");
});

test("--env entries that alone exceed launch.total_bytes are refused at --env before the lockfile is exported (control: exactly at it)", async () => {
  const total = LAUNCH_LIMITS["launch.total_bytes"];
  const entry = (name: string, bytes: number): string => `${name}=${"x".repeat(bytes - name.length - 1)}`;
  const max = RUN_ENV_LIMITS["run.env_entry_bytes"];
  // each entry costs its bytes and a NUL in the launch's total, as execve counts it
  const three = ["K0", "K1", "K2"].map((n) => entry(n, max));
  const over = await runWith([...three, entry("K3", total - 3 * (max + 1))]);
  assert.deepEqual([over.code, over.path], ["LIMIT_EXCEEDED", "--env"]);
  assert.match(over.message, /launch\.total_bytes/);
  assert.equal((await runWith([...three, entry("K3", total - 3 * (max + 1) - 1)])).code, "SIGNATURE_INVALID", "exactly at the limit gets past");
});
