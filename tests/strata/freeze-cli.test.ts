/**
 * `cairn freeze` as a command: the lockfile written (signed or not), what
 * `--json` reports, exit codes of refusals, and `lock diff` / `lock id` on
 * the frozen lockfile.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { environmentId, parseLockfileText, writeLockfile } from "../../src/strata/index.ts";
import { runCli } from "../helpers/cli.ts";
import { tempDir } from "./fixtures.ts";
import { lockWith, sha256sum, writeCondaChannel, writePipIndex } from "./freeze-fixtures.ts";

const dir = tempDir("cairn-freeze-cli-");
const pypi = join(dir, "pypi");
writePipIndex(pypi, {
  gamma: { wheels: [{ version: "1.0", requires: ["delta<2"] }] },
  delta: { wheels: [{ version: "1.0" }, { version: "2.0" }] },
  left: { wheels: [{ version: "1.0", requires: ["delta>=2"] }] },
});
const conda = join(dir, "conda");
writeCondaChannel(conda, [{ name: "tzdata", version: "2024a" }]);

function writeLock(name: string, packages: string): string {
  const path = join(dir, name);
  writeLockfile(path, lockWith(packages, [{ name: "python", version: "3.12.4" }]));
  return path;
}

test("cairn freeze pins the pip set from a directory index, leaves the conda set unpinned and says so; lock diff shows the pins", async () => {
  const lock = writeLock("two.lock", "  - manager: pip\n    packages: [{name: gamma}]\n  - manager: conda\n    packages: [{name: tzdata}]\n");
  const out = join(dir, "two.frozen.lock");
  const r = await runCli(["freeze", lock, "--index", pypi, "--out", out, "--json"]);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  const json = JSON.parse(r.stdout);
  assert.deepEqual(json.unpinned, ["conda"]);
  assert.deepEqual(
    json.packages[0].pins.map((p: { name: string; sha256: string }) => [p.name, p.sha256]),
    [
      ["delta", sha256sum(join(pypi, "delta", "delta-1.0-py3-none-any.whl"))],
      ["gamma", sha256sum(join(pypi, "gamma", "gamma-1.0-py3-none-any.whl"))],
    ],
  );
  assert.equal(json.packages[1].pinned, false);
  assert.ok(json.caveats.some((c: string) => c.includes("unpinned: conda")));
  const frozen = parseLockfileText(readFileSync(out, "utf8"));
  assert.equal(json.environment_id, environmentId(frozen));
  const diff = await runCli(["lock", "diff", lock, out, "--json"]);
  assert.equal(diff.code, 1, "they differ");
  assert.deepEqual(
    JSON.parse(diff.stdout).changes.map((c: { path: string; change: string }) => `${c.path} ${c.change}`),
    ["/packages/0/frozen added"],
  );
  // both indexes: everything pinned, nothing unpinned
  const all = await runCli(["freeze", out, "--conda-channel", conda, "--json"]);
  assert.equal(all.code, 0, all.stderr + all.stdout);
  assert.deepEqual(JSON.parse(all.stdout).unpinned, []);
  assert.ok(!JSON.parse(all.stdout).caveats.some((c: string) => c.includes("not pinned by digest")));
});

test("cairn freeze --sign writes a verifiable envelope; without --sign an old envelope at the path is removed", async () => {
  const keys = join(dir, "k");
  assert.equal((await runCli(["keygen", "--out", keys])).code, 0);
  const lock = writeLock("signed.lock", "  - manager: pip\n    packages: [{name: gamma}]\n");
  assert.equal((await runCli(["freeze", lock, "--index", pypi, "--sign", `${keys}.key`])).code, 0);
  assert.ok(existsSync(`${lock}.dsse.json`));
  assert.equal((await runCli(["lock", "id", lock, "--pub", `${keys}.pub`])).code, 0);
  assert.equal((await runCli(["freeze", lock, "--index", pypi])).code, 0);
  assert.ok(!existsSync(`${lock}.dsse.json`), "an unsigned rewrite leaves no stale signature");
});

test("refusals exit 1 with their code; a missing index is a usage error (exit 2)", async () => {
  const lock = writeLock("conflict.lock", "  - manager: pip\n    packages: [{name: gamma}, {name: left}]\n");
  const before = readFileSync(lock);
  const r = await runCli(["freeze", lock, "--index", pypi, "--json"]);
  assert.equal(r.code, 1);
  assert.equal(JSON.parse(r.stdout).error.code, "RESOLVE_CONFLICT");
  assert.deepEqual(readFileSync(lock), before, "a refused freeze writes nothing");
  const u = await runCli(["freeze", lock, "--json"]);
  assert.equal(u.code, 2);
  assert.equal(JSON.parse(u.stdout).error.code, "USAGE");
  const t = await runCli(["freeze", lock, "--index", "http://pypi.example/simple/", "--json"]);
  assert.equal(t.code, 1);
  assert.equal(JSON.parse(t.stdout).error.code, "TRUST_REFUSED");
  const ok = writeLock("ok.lock", "  - manager: pip\n    packages: [{name: gamma}]\n");
  assert.equal((await runCli(["freeze", ok, "--index", pypi])).code, 0, "control");
});
