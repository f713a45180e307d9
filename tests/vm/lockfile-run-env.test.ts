/**
 * `cairn run LOCK --env KEY=VAL` (issue 32, item 6): the guest program sees
 * the variables (a new one, and one that overrides the lockfile's env), the
 * run records them where replay and the receipt see them (the launch
 * identity in run.json, the names in environment.json and the signed
 * receipt), replay runs the recorded values and matches, and the image is
 * still exactly the lockfile's export (same manifest, same EnvironmentID).
 * Another value is another launch identity and another outcome (control).
 */
import assert from "node:assert/strict";
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { runCli } from "../helpers/cli.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { exampleRegistry, tempDir } from "../strata/fixtures.ts";
import { toySpec } from "../../examples/strata/build-registry.ts";
import { buildLayerFromDirectory, LocalRegistry } from "../../src/strata/index.ts";
import { generateSigningKey, writeKeyPair } from "../../src/core/index.ts";
import { GCC_SKIP } from "../workload/fixtures/static-program.ts";
import { staticFixture } from "./fixtures/programs.ts";
import { TEST_KIT_DIR, testKit, VM_SKIP } from "./fixtures/kit.ts";

interface RunJson {
  run_dir: string;
  status: string;
  outcome: string;
  environment: { environment_id: string; run_env?: string[] };
}

describe("run an environment lockfile with --env", { skip: VM_SKIP || GCC_SKIP }, () => {
  it("the guest sees the variables; run.json, environment.json and the receipt record them; replay matches; the image is the lockfile's", async () => {
    await testKit();
    const ex = exampleRegistry();
    const src = tempDir("cairn-printenv-");
    mkdirSync(join(src, "usr/local/bin"), { recursive: true });
    copyFileSync(staticFixture("printenv"), join(src, "usr/local/bin/printenv"));
    const reg = LocalRegistry.open(ex.registry);
    const built = buildLayerFromDirectory(src, toySpec({ name: "printenv", version: "1.0", provides: ["printenv@1.0"], files: {} }));
    reg.publishLayer(built.blob.blob, built.manifest, [ex.registryKey]);
    const profile = join(ex.root, "profile.yaml");
    writeFileSync(profile, readFileSync(join(PROJECT_ROOT, "examples/strata/profile.yaml"), "utf8").replace("  - numpy\n", "  - numpy\n  - printenv\n"));
    const lock = join(ex.root, "env.lock");
    const env = { ...process.env, CAIRN_HOME: join(ex.root, "home"), CAIRN_KIT: TEST_KIT_DIR };
    const verify = ["--pub", join(ex.root, "lock.pub"), "--registry", ex.registry, "--base", `rootfs:${ex.rootfs}`];
    const resolved = await runCli(
      ["resolve", profile, ...verify.slice(2), "--trust", `keyfile://${ex.root}/registry.pub`, "--sign", join(ex.root, "lock.key"), "--out", lock],
      env,
    );
    assert.equal(resolved.code, 0, resolved.stderr);
    assert.match(readFileSync(lock, "utf8"), /LC_ALL: C\.UTF-8/, "the lockfile sets LC_ALL, which --env overrides below");
    const exported = await runCli(["lock", "export", lock, ...verify, "--oci", join(ex.root, "image"), "--cmd", "/usr/local/bin/printenv", "--json"], env);
    assert.equal(exported.code, 0, exported.stderr);
    const image = JSON.parse(exported.stdout) as { manifest: string; environment_id: string };

    const key = join(ex.root, "me");
    writeKeyPair(key, generateSigningKey(), true);
    const r = await runCli(
      ["run", lock, ...verify, "--env", "GREETING=hello world", "--env", "LC_ALL=C", "--sign", `${key}.key`, "--cmd", "/usr/local/bin/printenv", "--json"],
      env,
    );
    assert.equal(r.code, 0, r.stderr + r.stdout);
    const a = JSON.parse(r.stdout) as RunJson;
    assert.equal(a.status, "passed");
    // the guest's environment: the lockfile's variable overridden in place, the new one after it, nothing from the host
    assert.equal(readFileSync(join(a.run_dir, "streams", "1.stdout"), "utf8"), "LC_ALL=C\nGREETING=hello world\n");
    assert.deepEqual(a.environment.run_env, ["GREETING", "LC_ALL"]);

    // the image is the lockfile's export with the same command, unchanged: the variables are in the launch, not the image
    const envFile = JSON.parse(readFileSync(join(a.run_dir, "environment.json"), "utf8")) as Record<string, unknown>;
    assert.deepEqual(envFile, {
      environment_id: image.environment_id,
      lockfile_sha256: envFile.lockfile_sha256,
      image_manifest: image.manifest,
      run_env: ["GREETING", "LC_ALL"],
    });
    // the signed receipt carries the names (and the launch identity that binds the values)
    const runA = JSON.parse(readFileSync(join(a.run_dir, "run.json"), "utf8")) as { workload: { launch: string } };
    const receipt = JSON.parse(readFileSync(join(a.run_dir, "receipt.dsse.json"), "utf8")) as { payload: string };
    const statement = JSON.parse(Buffer.from(receipt.payload, "base64").toString("utf8")) as {
      predicate: { environment: { run_env: string[] }; workload: { launch: string } };
    };
    assert.deepEqual(statement.predicate.environment.run_env, ["GREETING", "LC_ALL"]);
    assert.equal(statement.predicate.workload.launch, runA.workload.launch);
    assert.equal((await runCli(["receipt", "verify", join(a.run_dir, "receipt.dsse.json"), "--pub", `${key}.pub`, "--run", a.run_dir], env)).code, 0);

    // runs show lists the names too
    const shown = await runCli(["runs", "show", a.run_dir, "--json"], env);
    assert.equal(shown.code, 0, shown.stderr);
    assert.deepEqual((JSON.parse(shown.stdout) as { environment: { run_env: string[] } }).environment.run_env, ["GREETING", "LC_ALL"]);

    // replay runs the recorded values: it matches the record (same output, same outcome) with no --env given
    const p = await runCli(["replay", a.run_dir], env);
    assert.equal(p.code, 0, p.stderr + p.stdout);
    assert.match(p.stdout, /matches the record/);

    // control: another value is another launch identity and another outcome, on the same image
    const o = await runCli(["run", lock, ...verify, "--env", "GREETING=other", "--cmd", "/usr/local/bin/printenv", "--json"], env);
    assert.equal(o.code, 0, o.stderr + o.stdout);
    const b = JSON.parse(o.stdout) as RunJson;
    assert.equal(readFileSync(join(b.run_dir, "streams", "1.stdout"), "utf8"), "LC_ALL=C.UTF-8\nGREETING=other\n");
    const runB = JSON.parse(readFileSync(join(b.run_dir, "run.json"), "utf8")) as { workload: { launch: string } };
    assert.notEqual(runB.workload.launch, runA.workload.launch);
    assert.notEqual(b.outcome, a.outcome);
    assert.equal((JSON.parse(readFileSync(join(b.run_dir, "environment.json"), "utf8")) as { image_manifest: string }).image_manifest, image.manifest);

    // the spec form: source.lockfile.env sets them the same way
    const spec = join(ex.root, "printenv.yaml");
    writeFileSync(
      spec,
      "schema: cairn.workload/1\nsource:\n  lockfile:\n    path: ./env.lock\n    cmd: [/usr/local/bin/printenv]\n    env: {GREETING: from-spec}\n",
    );
    const s = await runCli(["run", spec, ...verify, "--json"], env);
    assert.equal(s.code, 0, s.stderr + s.stdout);
    const c = JSON.parse(s.stdout) as RunJson;
    assert.equal(readFileSync(join(c.run_dir, "streams", "1.stdout"), "utf8"), "LC_ALL=C.UTF-8\nGREETING=from-spec\n");
    assert.deepEqual(c.environment.run_env, ["GREETING"]);
  });
});
