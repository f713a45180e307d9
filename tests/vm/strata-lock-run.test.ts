/**
 * Issue 32's done-when, the run: a lockfile written by hand in Strata's
 * format (frozen, env, on_ready, defaults, formation members, a pip set and a
 * host requirement) is signed with `cairn lock sign`, its pip pin's archive is
 * recorded by `cairn freeze` (which checks the archive against the pinned
 * sha256 and leaves the lockfile's EnvironmentID as it was), and it runs under
 * record/replay: the guest sees the layers and the placed archive, and the
 * run replays.
 */
import assert from "node:assert/strict";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { parse } from "yaml";
import { runCli } from "../helpers/cli.ts";
import { publishLstreeLayer } from "../helpers/lstree-layer.ts";
import { sha256Hex, writePipIndex } from "../strata/freeze-fixtures.ts";
import { exampleRegistry, resolveWithCli, tempDir } from "../strata/fixtures.ts";
import { handLock } from "../strata/hand-lock.ts";
import { GCC_SKIP } from "../workload/fixtures/static-program.ts";
import { TEST_KIT_DIR, testKit, VM_SKIP } from "./fixtures/kit.ts";

describe("run a lockfile written in Strata's format", { skip: VM_SKIP || GCC_SKIP }, () => {
  it("signs, records its pip archive, runs and replays; the EnvironmentID is Strata's throughout", async () => {
    await testKit();
    const ex = exampleRegistry();
    const env = { ...process.env, CAIRN_HOME: join(ex.root, "home"), CAIRN_KIT: TEST_KIT_DIR };
    // The program the run executes, as one more signed layer of the registry.
    const lstreeLayer = publishLstreeLayer(ex);
    // A pip index holding the pinned archive.
    const index = tempDir("cairn-pip-");
    writePipIndex(index, { six: { wheels: [{ version: "1.16.0" }] } });
    const wheel = readdirSync(join(index, "six")).find((f) => f.endsWith(".whl"))!;
    const pin = { name: "six", version: "1.16.0", sha256: sha256Hex(readFileSync(join(index, "six", wheel))) };
    // The base facts as cairn probes the example rootfs.
    const profile = join(ex.root, "b.yaml");
    writeFileSync(profile, "name: b\nbase: {os: debian12}\nsoftware: []\n");
    assert.equal((await resolveWithCli(ex, profile, join(ex.root, "base.lock"), { sign: false })).code, 0);
    const base = (parse(readFileSync(join(ex.root, "base.lock"), "utf8"), { version: "1.2" }) as { base: Record<string, unknown> }).base;

    const hand = join(ex.root, "hand.lock");
    writeFileSync(hand, handLock(ex, base, { extraLayers: [lstreeLayer], pip: pin }));
    const strataId = (await runCli(["lock", "id", hand], env)).stdout.split(/\s+/)[0]!;
    assert.match(strataId, /^[0-9a-f]{64}$/);
    const key = ["--key", join(ex.root, "lock.key")];
    assert.equal((await runCli(["lock", "sign", hand, ...key], env)).code, 0);
    const flags = [
      "--pub",
      join(ex.root, "lock.pub"),
      "--registry",
      ex.registry,
      "--trust",
      `keyfile://${ex.root}/registry.pub`,
      "--base",
      `rootfs:${ex.rootfs}`,
    ];

    // Without the archive's record, nothing runs: cairn cannot place the pinned package, and says what to do.
    const refused = await runCli(["run", hand, ...flags, "--cmd", "/usr/local/bin/lstree", "--json"], env);
    assert.equal(refused.code, 1, refused.stdout);
    assert.equal(JSON.parse(refused.stdout).error.code, "STORE_MISSING");
    assert.match(JSON.parse(refused.stdout).error.hint, /cairn freeze/);

    const frozen = join(ex.root, "frozen.lock");
    const f = await runCli(["freeze", hand, "--pub", join(ex.root, "lock.pub"), "--index", index, "--out", frozen, "--sign", join(ex.root, "lock.key")], env);
    assert.equal(f.code, 0, f.stderr + f.stdout);
    assert.equal((await runCli(["lock", "id", frozen], env)).stdout.split(/\s+/)[0], strataId, "recording the archive does not change the environment");

    const r = await runCli(["run", frozen, ...flags, "--cmd", "/usr/local/bin/lstree", "--json"], env);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    const run = JSON.parse(r.stdout) as { run_dir: string; status: string };
    assert.equal(run.status, "passed");
    const listed = readFileSync(join(run.run_dir, "streams", "1.stdout"), "utf8").split("\n");
    for (const path of ["/usr/local/bin/lstree", `/opt/cairn/packages/pip-0/archives/${wheel}`]) {
      assert.ok(
        listed.some((l) => l.startsWith(`f ${path}`)),
        `the guest sees ${path}`,
      );
    }
    const p = await runCli(["replay", run.run_dir], env);
    assert.equal(p.code, 0, p.stderr);
    assert.match(p.stdout, /matches the record/);
  });
});
