/**
 * `cairn run env.lock --cmd ...`: an environment lockfile resolved from the
 * example profile (plus one layer holding a static tree-listing program) runs
 * under record/replay with one command, and the guest sees exactly the tree
 * the lockfile names: the listing the program prints inside the VM equals the
 * base directory plus every file and symlink the layer manifests list (and
 * their parent directories), with nothing else but the runtime overlay.
 */
import assert from "node:assert/strict";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { runCli } from "../helpers/cli.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { exampleRegistry, tempDir } from "../strata/fixtures.ts";
import { toySpec } from "../../examples/strata/build-registry.ts";
import { buildLayerFromDirectory, LocalRegistry, readLockfile } from "../../src/strata/index.ts";
import { GCC_SKIP } from "../workload/fixtures/static-program.ts";
import { staticFixture } from "./fixtures/programs.ts";
import { TEST_KIT_DIR, testKit, VM_SKIP } from "./fixtures/kit.ts";

/** "TYPE PATH [TARGET]" lines for everything under a directory, as lstree.c prints them (d, f, l). */
function listDir(root: string, rel = ""): string[] {
  const out: string[] = rel === "" ? ["d /"] : [];
  for (const d of readdirSync(join(root, rel), { withFileTypes: true })) {
    const p = `${rel}/${d.name}`;
    if (d.isSymbolicLink()) out.push(`l ${p} ${readlinkSync(join(root, p))}`);
    else if (d.isDirectory()) out.push(`d ${p}`, ...listDir(root, p));
    else out.push(`f ${p}`);
  }
  return out;
}

function withParents(lines: Iterable<string>): Set<string> {
  const out = new Set(lines);
  for (const l of [...out]) {
    const parts = l.split(" ")[1]!.split("/");
    for (let i = 2; i < parts.length; i++) out.add(`d ${parts.slice(0, i).join("/")}`);
  }
  return out;
}

describe("run an environment lockfile", { skip: VM_SKIP || GCC_SKIP }, () => {
  it("records and replays the exported environment; the guest's tree is the lockfile's base plus its layers, nothing else", async () => {
    await testKit();
    const ex = exampleRegistry();
    const src = tempDir("cairn-lstree-");
    mkdirSync(join(src, "usr/local/bin"), { recursive: true });
    copyFileSync(staticFixture("lstree"), join(src, "usr/local/bin/lstree"));
    const reg = LocalRegistry.open(ex.registry);
    const built = buildLayerFromDirectory(src, toySpec({ name: "lstree", version: "1.0", provides: ["lstree@1.0"], files: {} }));
    reg.publishLayer(built.blob.blob, built.manifest, [ex.registryKey]);
    const profile = join(ex.root, "profile.yaml");
    writeFileSync(profile, readFileSync(join(PROJECT_ROOT, "examples/strata/profile.yaml"), "utf8").replace("  - numpy\n", "  - numpy\n  - lstree\n"));
    const lock = join(ex.root, "env.lock");
    const env = { ...process.env, CAIRN_HOME: join(ex.root, "home"), CAIRN_KIT: TEST_KIT_DIR };
    const base = ["--registry", ex.registry, "--base", `rootfs:${ex.rootfs}`];
    const resolved = await runCli(
      ["resolve", profile, ...base, "--trust", `keyfile://${ex.root}/registry.pub`, "--sign", join(ex.root, "lock.key"), "--out", lock],
      env,
    );
    assert.equal(resolved.code, 0, resolved.stderr);

    // refusals before anything runs: no --cmd, another key
    assert.equal((await runCli(["run", lock, "--pub", join(ex.root, "lock.pub"), ...base], env)).code, 2);
    assert.equal((await runCli(["run", lock, "--pub", join(ex.root, "registry.pub"), ...base, "--cmd", "/usr/local/bin/lstree"], env)).code, 1);
    assert.equal(
      existsSync(join(ex.root, "home", "runs")) && readdirSync(join(ex.root, "home", "runs")).some((n) => /^\d{8}T/.test(n)),
      false,
      "no run directory",
    );

    const r = await runCli(["run", lock, "--pub", join(ex.root, "lock.pub"), ...base, "--cmd", "/usr/local/bin/lstree", "--json"], env);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    const run = JSON.parse(r.stdout) as { run_dir: string; status: string; outcome: string; environment: { environment_id: string } };
    assert.equal(run.status, "passed");
    const listed = readFileSync(join(run.run_dir, "streams", "1.stdout"), "utf8")
      .trim()
      .split("\n");

    // the oracle: the base directory as the host sees it, plus each layer manifest's files and symlinks
    const l = readLockfile(lock).lock;
    const layerLines = (ids: readonly string[]): string[] =>
      ids.flatMap((id) => {
        const m = reg.readLayer(id).value;
        return [...[...m.content_manifest.keys()].map((p) => `f ${p}`), ...[...m.symlinks].map(([p, t]) => `l ${p} ${t}`)];
      });
    const expected = withParents([...listDir(ex.rootfs), ...layerLines(l.layers.map((x) => x.id))]);
    const overlay = new Set(["d /dev", "c /dev/null", "c /dev/zero", "d /tmp"]);
    const seen = new Set(listed.filter((x) => !overlay.has(x)));
    assert.equal(listed.length, new Set(listed).size, "each entry once");
    assert.deepEqual([...seen].sort(), [...expected].sort());
    // control: the comparison fails when the oracle leaves out one layer
    const fewer = withParents([...listDir(ex.rootfs), ...layerLines(l.layers.filter((x) => !x.id.startsWith("numpy")).map((x) => x.id))]);
    assert.notDeepEqual([...seen].sort(), [...fewer].sort());

    const p = await runCli(["replay", run.run_dir], env);
    assert.equal(p.code, 0, p.stderr);
    assert.match(p.stdout, /matches the record/);

    // the same run as a spec naming the lockfile, with a run section: its expectations apply
    const spec = (exitCode: number): string => {
      const f = join(ex.root, `lstree-${exitCode}.yaml`);
      writeFileSync(
        f,
        `schema: cairn.workload/1\nsource:\n  lockfile:\n    path: ./env.lock\n    cmd: [/usr/local/bin/lstree]\nrun:\n  steps:\n    - action: start\n    - action: close-stdin\n  expect:\n    - exit-code: ${exitCode}\n      stdout-includes: ["f /usr/local/bin/lstree"]\n`,
      );
      return f;
    };
    const good = await runCli(["run", spec(0), "--pub", join(ex.root, "lock.pub"), ...base, "--json"], env);
    assert.equal(good.code, 0, good.stderr + good.stdout);
    const fromSpec = JSON.parse(good.stdout) as { outcome: string; workload: string; environment: { environment_id: string } };
    assert.equal(fromSpec.environment.environment_id, run.environment.environment_id);
    const bad = await runCli(["run", spec(3), "--pub", join(ex.root, "lock.pub"), ...base, "--json"], env);
    assert.equal(bad.code, 1);
    assert.equal((JSON.parse(bad.stdout) as { error: { code: string } }).error.code, "ASSERTION_FAILED");
    // the spec names the command: --cmd beside it is a usage error
    assert.equal((await runCli(["run", spec(0), "--pub", join(ex.root, "lock.pub"), ...base, "--cmd", "/x"], env)).code, 2);
  });
});
