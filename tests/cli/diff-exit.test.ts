/**
 * The exit codes of the diff commands, as `diff(1)` and `cmp(1)` give them:
 * 0 the inputs are equal, 1 they differ, 2 trouble (a missing, unreadable or
 * invalid input). A script must be able to tell "they differ" from "one of
 * them is not there": before issue 31 both were exit 1. The controls are the
 * equal and different pairs; each trouble case is next to them.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { lockfileToYaml } from "../../src/strata/index.ts";
import { runCli } from "../helpers/cli.ts";
import { PINNED_IMAGE, TAGGED_IMAGE } from "../manifest/helpers.ts";
import { tempDir } from "../strata/fixtures.ts";
import { lockWith } from "../strata/freeze-fixtures.ts";

const dir = tempDir("cairn-diff-exit-");
const file = (name: string, text: string): string => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};
const missing = join(dir, "no-such-file");
const directory = join(dir, "a-directory");
mkdirSync(directory);

const lockA = file("a.lock", lockfileToYaml(lockWith("  - manager: pip\n    packages: [{name: gamma}]\n")));
// Another base: one more capability, so another base digest.
const lockB = file("b.lock", lockfileToYaml(lockWith("  - manager: pip\n    packages: [{name: gamma}]\n", [{ name: "gcc", version: "12" }])));
// A rule-breaking lockfile: its base digest is not 64 lowercase hex. `lock diff` still shows it, with its problems.
const lockInvalid = file(
  "invalid.lock",
  readFileSync(lockA, "utf8").replace(/^ {2}ami_sha256: ([0-9a-f]{64})$/m, (_, h: string) => `  ami_sha256: ${h.toUpperCase()}`),
);
const lockGarbage = file("garbage.lock", "format: [unclosed\n");

test("lock diff: 0 equal, 1 different (controls)", async () => {
  assert.equal((await runCli(["lock", "diff", lockA, lockA])).code, 0);
  const d = await runCli(["lock", "diff", lockA, lockB, "--json"]);
  assert.equal(d.code, 1, d.stdout + d.stderr);
  assert.equal(JSON.parse(d.stdout).same_id, false);
});

test("lock diff: exit 2 for a missing file, a directory, a file that does not parse", async () => {
  for (const [a, b, code] of [
    [lockA, missing, "IO_ERROR"],
    [missing, lockA, "IO_ERROR"],
    [lockA, directory, undefined],
    [lockA, lockGarbage, "YAML_SYNTAX"],
  ] as const) {
    const r = await runCli(["lock", "diff", a, b, "--json"]);
    assert.equal(r.code, 2, `${a} ${b}: ${r.stdout}`);
    const error = JSON.parse(r.stdout).error;
    if (code !== undefined) assert.equal(error.code, code);
    const human = await runCli(["lock", "diff", a, b]);
    assert.equal(human.code, 2);
    assert.match(human.stderr, /cairn: error \[/);
  }
});

test("lock diff: exit 2 for a rule-breaking lockfile, still shown with its problems", async () => {
  const r = await runCli(["lock", "diff", lockA, lockInvalid, "--json"]);
  assert.equal(r.code, 2, r.stdout);
  const j = JSON.parse(r.stdout);
  assert.ok(j.problems_b.length >= 1, "the problems are listed");
  assert.equal(j.id_b, null);
  const human = await runCli(["lock", "diff", lockInvalid, lockA]);
  assert.equal(human.code, 2);
  assert.match(human.stdout, /^! a \/base/m);
});

const devA = file("a.json", `{ "image": "${PINNED_IMAGE}" }`);
const devB = file("b.json", `{ "image": "${TAGGED_IMAGE}" }`);
const devRefused = file("refused.json", `{ "image": "${PINNED_IMAGE}", "runArgs": ["--privileged"] }`);
const devGarbage = file("garbage.json", `{ "image": `);

test("manifest diff: 0 equal, 1 different (controls)", async () => {
  assert.equal((await runCli(["manifest", "diff", devA, devA])).code, 0);
  const d = await runCli(["manifest", "diff", devA, devB, "--json"]);
  assert.equal(d.code, 1, d.stdout + d.stderr);
  assert.equal(JSON.parse(d.stdout).equal, false);
});

test("manifest diff: exit 2 for a missing file, a directory, a file that does not parse, a refused input", async () => {
  for (const [a, b, code] of [
    [devA, missing, "IO_ERROR"],
    [missing, devB, "IO_ERROR"],
    [devA, directory, undefined],
    [devA, devGarbage, "JSON_SYNTAX"],
    [devRefused, devA, "MANIFEST_REFUSED"],
  ] as const) {
    const r = await runCli(["manifest", "diff", a, b, "--json"]);
    assert.equal(r.code, 2, `${a} ${b}: ${r.stdout}`);
    if (code !== undefined) assert.equal(JSON.parse(r.stdout).error.code, code);
    assert.equal((await runCli(["manifest", "diff", a, b])).code, 2);
  }
});

test("a usage error is still exit 2, and a diff command's help states the exit codes", async () => {
  assert.equal((await runCli(["lock", "diff", lockA])).code, 2);
  assert.equal((await runCli(["manifest", "diff", devA])).code, 2);
  for (const cmd of [
    ["lock", "diff"],
    ["manifest", "diff"],
  ]) {
    let help = "";
    const io = { out: (t: string) => void (help += t), err: (t: string) => void (help += t), tty: false };
    const { main } = await import("../../src/cli/main.ts");
    await main([...cmd, "--help"], io);
    assert.match(help.replace(/\s+/g, " "), /exit 0 .*equal.*, 1 .*differ.*, 2 trouble/, cmd.join(" "));
  }
});

test("a command that is not a diff keeps the general convention: a missing file is exit 1", async () => {
  const r = await runCli(["manifest", "ingest", missing, "--json"]);
  assert.equal(r.code, 1);
  assert.equal(JSON.parse(r.stdout).error.code, "IO_ERROR");
});

test("a lockfile that is a FIFO or a device is IO_ERROR naming it, not a registry problem; lock diff exits 2 at once (second pass)", async () => {
  const fifo = join(dir, "fifo.lock");
  execFileSync("mkfifo", [fifo]);
  for (const bad of [fifo, "/dev/zero"]) {
    for (const args of [
      ["lock", "diff", bad, lockA, "--json"],
      ["lock", "id", bad, "--json"],
    ]) {
      const r = await runCli(args);
      assert.notEqual(r.code, 0, args.join(" "));
      const e = JSON.parse(r.stdout).error;
      assert.equal(e.code, "IO_ERROR", `${args.join(" ")}: ${e.code} ${e.message}`);
      assert.equal(e.path, bad);
    }
  }
  assert.equal((await runCli(["lock", "id", lockA])).code, 0, "control: a regular lockfile");
});
