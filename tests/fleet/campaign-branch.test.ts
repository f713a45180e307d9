/**
 * Explore on the fleet's executors (issue 35 item 5): a campaign with
 * `mode: branch` names parent runs, a checkpoint and a vary file; each
 * variation is a task named by the parent's run.json, the checkpoint and
 * the tail's bytes, which `cairn campaign task` records with `recordBranch`
 * into the results directory and signs. Without a VM: the plan's names and
 * inputs, the plan read back (an edited tail refused), and the refusals
 * before anything runs, each with its control. With a VM: two branches of a
 * disk-root probe run through the local executor, each a branch of the
 * parent whose tail is its task's, the campaign receipt verifying, and a
 * second run of the same file running nothing.
 */
import assert from "node:assert/strict";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { generateSigningKey, isCairnError, readVerifyingKey, sha256, writeKeyPair } from "../../src/core/index.ts";
import {
  expandCampaign,
  localExecutor,
  makePlan,
  parseCampaign,
  readCampaignFile,
  readPlan,
  runCampaign,
  verifyCampaign,
  writePlan,
} from "../../src/fleet/index.ts";
import { recordRun, type RunManifest } from "../../src/vm/index.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { TEST_KIT_DIR, testKit, VM_SKIP } from "../vm/fixtures/kit.ts";
import { probePath } from "../vm/fixtures/programs.ts";
import { d, manifest, writeRun } from "../vm/fixtures/run-dirs.ts";

const work = mkdtempSync(join(tmpdir(), "cairn-campaign-branch-"));
after(() => rmSync(work, { recursive: true, force: true }));
const CLI_MAIN = join(PROJECT_ROOT, "tests", "fleet", "fixtures", "cli-main.ts");

const TAIL = 'steps:\n  - action: write-stdin\n    data: "echo two\\n"\n    after: {output: stdout, contains: "slept"}\n  - action: close-stdin\n';
const VARY = `${TAIL}vary:\n  - set: /steps/0/data\n    values: ["echo two\\n", "echo three\\n"]\n`;

function campaign(dir: string, body: string): string {
  const file = join(dir, "branch.yaml");
  writeFileSync(file, `schema: cairn.campaign/1\n${body}`);
  return file;
}

describe("a branch campaign's plan, without a VM", () => {
  const dir = join(work, "plan");
  const parent = join(dir, "parent");
  writeRun(parent, "20261201T000000Z-0000000a", true);
  const m = {
    ...manifest("20261201T000000Z-0000000a", true),
    checkpoints: { file: { sha256: d("8"), size: 4096 }, taken: [{ name: "one", after: { step: 1 }, icount: 1000 }] },
  };
  writeFileSync(join(parent, "run.json"), JSON.stringify(m));
  writeFileSync(join(dir, "vary.yaml"), VARY);
  const good = "mode: branch\nruns: [{run: ./parent}]\nbranch: {at: one, vary: ./vary.yaml}\n";

  it("names one task per variation by the parent's run.json, the checkpoint and the tail's bytes; the plan reads back, and an edited tail is refused", async () => {
    const file = readCampaignFile(campaign(dir, good));
    const expansion = await expandCampaign(file, { storeDir: join(work, "store"), cairnVersion: "test" });
    assert.equal(expansion.tasks.length, 2);
    const record = sha256(readFileSync(join(parent, "run.json")));
    for (const [i, t] of expansion.tasks.entries()) {
      assert.equal(t.identity.mode, "branch");
      assert.ok(t.identity.mode === "branch" && t.identity.record === record && t.identity.checkpoint === "one" && t.identity.http_root === null);
      assert.ok("parent" in t.input && t.input.parent === parent && t.input.at === "one");
      const bytes = Buffer.from(`${JSON.stringify("parent" in t.input ? t.input.tail : null)}\n`);
      assert.equal(t.identity.mode === "branch" && t.identity.tail, sha256(bytes));
      assert.deepEqual(t.origin.point, [i === 0 ? "echo two\n" : "echo three\n"]);
    }
    assert.notEqual(expansion.tasks[0]!.id, expansion.tasks[1]!.id);
    const out = join(dir, "results");
    const { mkdirSync } = await import("node:fs");
    mkdirSync(out);
    const plan = makePlan(file, expansion);
    writePlan(out, plan);
    assert.equal(JSON.stringify(readPlan(out)?.tasks), JSON.stringify(plan.tasks), "control: the plan reads back whole");
    const text = readFileSync(join(out, "campaign.json"), "utf8");
    writeFileSync(join(out, "campaign.json"), text.replace("echo three", "echo four!"));
    assert.throws(
      () => readPlan(out),
      (e: unknown) => isCairnError(e) && e.issues.some((i) => i.path === "/tasks/1/input/tail"),
    );
  });

  it("refuses before anything runs: no branch entry, a branch entry in a record campaign, a spec entry, a checkpoint not taken, a served directory the parent did not serve, a vary file that does not read", async () => {
    const refused = async (body: string, path: string) => {
      const f = campaign(dir, body);
      await assert.rejects(
        (async () => expandCampaign(readCampaignFile(f), { storeDir: join(work, "store"), cairnVersion: "test" }))(),
        (e: unknown) => isCairnError(e) && e.code === "CAMPAIGN_INVALID" && (e.path === path || e.issues.some((i) => i.path === path)),
        path,
      );
    };
    await refused("mode: branch\nruns: [{run: ./parent}]\n", "/branch");
    await refused("mode: record\nruns: [{spec: ./x.yaml}]\nbranch: {at: one, vary: ./vary.yaml}\n", "/branch");
    await refused("mode: branch\nruns: [{spec: ./x.yaml}]\nbranch: {at: one, vary: ./vary.yaml}\n", "/runs/0/spec");
    await refused("mode: branch\nruns: [{run: ./parent}]\nbranch: {at: two, vary: ./vary.yaml}\n", "/branch/at");
    // the parent served no directory: one named is refused at plan time, not by every task (second pass)
    await refused("mode: branch\nruns: [{run: ./parent}]\nbranch: {at: one, vary: ./vary.yaml, serve: ./parent}\n", "/branch/serve");
    writeFileSync(join(dir, "bad-vary.yaml"), `${TAIL}vary:\n  - set: /steps/7/data\n    values: [a]\n`);
    await refused("mode: branch\nruns: [{run: ./parent}]\nbranch: {at: one, vary: ./bad-vary.yaml}\n", "/branch/vary");
    assert.equal(parseCampaign(Buffer.from(`schema: cairn.campaign/1\n${good}`), join(dir, "x.yaml")).mode, "branch", "control");
  });
});

describe("a branch campaign on the local executor", { skip: VM_SKIP }, () => {
  it("records each variation as a branch of the parent, signs it, verifies offline, and runs nothing the second time", async () => {
    const kit = await testKit();
    const dir = join(work, "vm");
    const { mkdirSync } = await import("node:fs");
    mkdirSync(dir);
    copyFileSync(probePath("static"), join(dir, "probe"));
    const spec = {
      schema: "cairn.workload/1",
      source: { binary: { path: "probe", user: "1000:1000" } },
      run: {
        root: "disk",
        steps: [
          { action: "start" },
          { action: "write-stdin", data: "echo one\nsleep 1500\n", after: { output: "stdout", contains: "ready" } },
          { action: "write-stdin", data: "echo two\n", after: { output: "stdout", contains: "slept" } },
          { action: "close-stdin", after: { output: "stdout", contains: "echo two" } },
        ],
        checkpoints: [{ name: "one", after: { step: 1 } }],
      },
    };
    writeFileSync(join(dir, "spec.json"), JSON.stringify(spec));
    const storeDir = join(dir, "store");
    const parent = await recordRun({ input: join(dir, "spec.json"), storeDir, runsDir: join(dir, "runs"), kit, cairnVersion: "test" });
    assert.equal(parent.manifest.checkpoints?.taken[0]?.name, "one");
    writeFileSync(join(dir, "vary.yaml"), VARY);
    const file = campaign(dir, `mode: branch\nruns: [{run: ${JSON.stringify(parent.runDir)}}]\nbranch: {at: one, vary: ./vary.yaml}\n`);
    const { keyPath, pubPath } = writeKeyPair(join(dir, "k"), generateSigningKey());
    const out = join(dir, "results");
    const key = (await import("../../src/core/index.ts")).readSigningKey(keyPath);
    process.env.CAIRN_KIT = TEST_KIT_DIR;
    const run = () =>
      runCampaign({
        file,
        out,
        executor: localExecutor,
        jobs: 2,
        storeDir,
        cairnVersion: "test",
        key,
        taskArgv: (d, id) => [
          process.execPath,
          "--import",
          "tsx",
          CLI_MAIN,
          "campaign",
          "task",
          d,
          id,
          "--key",
          keyPath,
          "--store",
          storeDir,
          "--kit",
          TEST_KIT_DIR,
        ],
      });
    const r = await run();
    const plan = readPlan(out)!;
    assert.equal(plan.tasks.length, 2);
    assert.equal(r.progress.counts.done, 2, JSON.stringify(r.progress));
    const outputs: string[] = [];
    for (const t of r.progress.tasks) {
      assert.equal(t.verdict, "recorded");
      const task = plan.tasks.find((x) => x.id === t.task)!;
      const result = JSON.parse(readFileSync(join(out, "tasks", t.task, "result.json"), "utf8")) as { run: string; mode: string };
      assert.equal(result.mode, "branch");
      const runDir = join(out, result.run);
      const m = JSON.parse(readFileSync(join(runDir, "run.json"), "utf8")) as RunManifest;
      assert.equal(m.branch?.parent.run_id, parent.manifest.run_id);
      assert.equal(m.branch?.checkpoint.name, "one");
      // the branch keeps exactly the tail its task's name covers
      assert.equal(task.identity.mode === "branch" && task.identity.tail, sha256(readFileSync(join(runDir, "branch.json"))));
      outputs.push(readFileSync(join(runDir, "streams", "1.stdout"), "utf8"));
    }
    assert.deepEqual(outputs.map((o) => /echo (two|three)/.exec(o)?.[0]).sort(), ["echo three", "echo two"], outputs.join("\n---\n"));
    const v = verifyCampaign(out, plan, [readVerifyingKey(pubPath)]);
    assert.deepEqual(v.problems, []);
    assert.equal(v.verified, 2);
    const again = await run();
    assert.deepEqual([again.ends.length, again.skipped], [0, 2], "finished tasks are skipped by name");
  });
});
