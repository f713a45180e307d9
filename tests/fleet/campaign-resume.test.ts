/**
 * Issue 34 items 2 (local), 5 and 6 without a VM: the local executor, the
 * results directory, resume and refusals, with a stand-in task command
 * (fixtures/fake-task.ts) that publishes as `campaign task` does. What a
 * real task records, replays and verifies is tests/fleet/campaign-vm.test.ts.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { generateSigningKey, writeKeyPair, type SigningKey } from "../../src/core/index.ts";
import {
  campaignProgress,
  defaultJobs,
  executorByName,
  expandCampaign,
  readCampaignFile,
  stagingHost,
  localExecutor,
  readPlan,
  runCampaign,
  type CampaignRunOptions,
  type ExecutorEvent,
} from "../../src/fleet/index.ts";
import { runCli } from "../helpers/cli.ts";
import { checkDocument } from "../helpers/json-schemas.ts";
import { assertCodeAsync } from "../helpers/errors.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { GCC_SKIP } from "../workload/fixtures/static-program.ts";
import { helloDir, writeCampaign } from "./fixtures/campaigns.ts";

const FAKE = join(PROJECT_ROOT, "tests", "fleet", "fixtures", "fake-task.ts");
const RECORD =
  'schema: cairn.campaign/1\nmode: record\nruns: [{spec: ./hello.yaml}]\nmatrix:\n  - set: /run/steps/1/data\n    values: ["a\\n", "b\\n", "c\\n"]\n';

interface Setup {
  dir: string;
  out: string;
  file: string;
  log: string;
  key: SigningKey;
  run(how?: string, extra?: Partial<CampaignRunOptions>): ReturnType<typeof runCampaign>;
  starts(): string[];
}

function setup(text = RECORD): Setup {
  const dir = helloDir();
  const key = generateSigningKey();
  const { keyPath } = writeKeyPair(join(dir, "k"), key);
  const log = join(dir, "fake.log");
  writeFileSync(log, "");
  const file = writeCampaign(dir, text);
  const out = join(dir, "results");
  return {
    dir,
    out,
    file,
    log,
    key,
    run: (how = "ok", extra = {}) => {
      process.env.FAKE_TASK = how;
      process.env.FAKE_LOG = log;
      return runCampaign({
        file,
        out,
        executor: localExecutor,
        jobs: 2,
        storeDir: join(dir, "store"),
        cairnVersion: "test",
        key,
        taskArgv: (d, id) => [process.execPath, "--import", "tsx", FAKE, d, id, keyPath],
        ...extra,
      });
    },
    starts: () =>
      readFileSync(log, "utf8")
        .split("\n")
        .filter((l) => l.startsWith("start "))
        .map((l) => l.slice(6)),
  };
}

async function until(what: () => boolean): Promise<void> {
  while (!what()) await new Promise((r) => setImmediate(r));
}

describe("the local executor and resume", { skip: GCC_SKIP }, () => {
  it("runs every task once, each published whole; a rerun runs nothing, skipping finished tasks by name", async () => {
    const s = setup();
    const r = await s.run();
    assert.equal(r.plan.tasks.length, 3);
    assert.deepEqual(
      r.ends.map((e) => [e.published, e.attempts]),
      [
        [true, 1],
        [true, 1],
        [true, 1],
      ],
    );
    assert.deepEqual(s.starts().sort(), r.plan.tasks.map((t) => t.id).sort());
    assert.deepEqual(campaignProgress(s.out, r.plan).counts, { done: 3, running: 0, failed: 0, pending: 0 });
    for (const t of r.plan.tasks) assert.deepEqual(readdirSync(join(s.out, "tasks", t.id)).sort(), ["receipt.dsse.json", "result.json"]);
    const again = await s.run();
    assert.equal(again.skipped, 3);
    assert.equal(again.ends.length, 0);
    assert.equal(s.starts().length, 3, "no task started twice");
  });

  it("a launch that publishes nothing is retried up to the limit, then reported as infrastructure in the process's words; the next run reruns it", async () => {
    const s = setup(`${RECORD}retries: 1\n`);
    const flaky = await s.run("fail-first");
    assert.deepEqual(
      flaky.ends.map((e) => [e.published, e.attempts]),
      [
        [true, 2],
        [true, 2],
        [true, 2],
      ],
    );
    const t = setup(`${RECORD}retries: 1\n`);
    const dead = await t.run("fail-always");
    assert.ok(dead.ends.every((e) => !e.published && e.attempts === 2));
    assert.match(dead.ends[0]!.failure ?? "", /^exited 1: fake task: the node went away$/);
    const p = campaignProgress(t.out, dead.plan);
    assert.deepEqual(p.counts, { done: 0, running: 0, failed: 3, pending: 0 });
    assert.deepEqual(p.verdicts, { infrastructure: 3 });
    const receipt = JSON.parse(Buffer.from(JSON.parse(readFileSync(dead.receipt, "utf8")).payload, "base64").toString("utf8"));
    assert.equal(receipt.predicate.complete, false);
    assert.deepEqual(receipt.subject, [], "no task with a result: nothing is listed as signed");
    const fixed = await t.run("ok");
    assert.equal(fixed.ends.length, 3);
    assert.deepEqual(campaignProgress(t.out, fixed.plan).counts, { done: 3, running: 0, failed: 0, pending: 0 });
    assert.deepEqual(readdirSync(join(t.out, "failures")), [], "the failure notes are gone once the tasks published");
  });

  it("a task attempt killed half-way leaves staging that is never counted and is removed by the next run, which runs only what was missing", async () => {
    const s = setup();
    const first = await s.run("fail-always", {}); // plan kept, nothing published
    const [a, b] = first.plan.tasks.map((t) => t.id) as [string, string];
    writeFileSync(s.log, "");
    // one attempt stages and is killed (SIGKILL: no cleanup) before it publishes
    const child = spawn(process.execPath, ["--import", "tsx", FAKE, s.out, a, join(s.dir, "k.key")], {
      env: { ...process.env, FAKE_TASK: `hang=${a}`, FAKE_LOG: s.log },
      stdio: "ignore",
    });
    await until(() => existsSync(`${s.log}.hang`));
    const staged = readdirSync(join(s.out, "tasks")).filter((n) => n.startsWith(`.${a}.`));
    assert.equal(staged.length, 1);
    // while it lives, it is running: `campaign run` leaves it alone
    assert.equal(campaignProgress(s.out, first.plan).counts.running, 1);
    const meanwhile = await s.run("ok");
    assert.ok(!meanwhile.ends.some((e) => e.task === a), "a task a live process is writing is not started twice");
    assert.ok(meanwhile.ends.some((e) => e.task === b));
    child.kill("SIGKILL");
    await new Promise((r) => child.on("exit", r));
    assert.equal(campaignProgress(s.out, first.plan).counts.done, 2, "the half-written task is not counted");
    writeFileSync(s.log, "");
    const resumed = await s.run("ok");
    assert.deepEqual(s.starts(), [a], "only the missing task ran");
    assert.equal(resumed.skipped, 2);
    assert.deepEqual(
      readdirSync(join(s.out, "tasks")).filter((n) => n.startsWith(".")),
      [],
      "the dead attempt's staging is gone",
    );
    assert.deepEqual(campaignProgress(s.out, resumed.plan).counts, { done: 3, running: 0, failed: 0, pending: 0 });
  });

  it("staging another node writes (a shared results directory) is never removed from this host, and does not keep its task from running here", async () => {
    const s = setup();
    const first = await s.run("fail-always");
    const [a] = first.plan.tasks.map((t) => t.id) as [string];
    // a pid that is dead here says nothing about a process on another node
    const remote = `.${a}.other-node.999999.0123456789ab.tmp`;
    mkdirSync(join(s.out, "tasks", remote), { mode: 0o700 });
    writeFileSync(join(s.out, "tasks", remote, "result.json"), "half-written");
    // control: this host's staging with a dead pid is removed
    const local = `.${a}.${stagingHost()}.999999.0123456789ab.tmp`;
    mkdirSync(join(s.out, "tasks", local), { mode: 0o700 });
    const r = await s.run("ok");
    assert.ok(existsSync(join(s.out, "tasks", remote)), "another node's staging is left alone");
    assert.ok(!existsSync(join(s.out, "tasks", local)), "this host's dead staging is removed");
    assert.ok(r.ends.some((e) => e.task === a && e.published));
    assert.deepEqual(campaignProgress(s.out, r.plan).counts, { done: 3, running: 0, failed: 0, pending: 0 });
  });

  it("a results directory planted with a symlink or a foreign file is refused before anything runs (control: without the plant it resumes)", async () => {
    const s = setup();
    const r = await s.run();
    const [a] = r.plan.tasks.map((t) => t.id) as [string];
    const elsewhere = join(s.dir, "elsewhere");
    mkdirSync(elsewhere);
    writeFileSync(join(elsewhere, "result.json"), "{}");
    const plants: [string, () => void, () => void, "ROOT_UNSAFE" | "ROOT_FOREIGN"][] = [
      [
        "a task directory that is a symlink",
        () => {
          rmSync(join(s.out, "tasks", a), { recursive: true });
          symlinkSync(elsewhere, join(s.out, "tasks", a));
        },
        () => rmSync(join(s.out, "tasks", a)),
        "ROOT_UNSAFE",
      ],
      ["a foreign file at the top", () => writeFileSync(join(s.out, "notes.txt"), "x"), () => rmSync(join(s.out, "notes.txt")), "ROOT_FOREIGN"],
      [
        "a foreign file in a task directory",
        () => writeFileSync(join(s.out, "tasks", r.plan.tasks[1]!.id, "extra"), "x"),
        () => rmSync(join(s.out, "tasks", r.plan.tasks[1]!.id, "extra")),
        "ROOT_FOREIGN",
      ],
      [
        "the plan as a symlink",
        () => {
          writeFileSync(join(s.dir, "plan.json"), readFileSync(join(s.out, "campaign.json")));
          rmSync(join(s.out, "campaign.json"));
          symlinkSync(join(s.dir, "plan.json"), join(s.out, "campaign.json"));
        },
        () => {
          rmSync(join(s.out, "campaign.json"));
          writeFileSync(join(s.out, "campaign.json"), readFileSync(join(s.dir, "plan.json")), { mode: 0o600 });
        },
        "ROOT_UNSAFE",
      ],
    ];
    for (const [what, plant, unplant, code] of plants) {
      writeFileSync(s.log, "");
      plant();
      await assertCodeAsync(() => s.run(), code);
      assert.deepEqual(s.starts(), [], `${what}: nothing ran`);
      unplant();
    }
    // control: the same directory without the plants resumes (task a, whose directory was replaced, runs again)
    writeFileSync(s.log, "");
    const resumed = await s.run();
    assert.deepEqual(s.starts(), [a]);
    assert.equal(resumed.progress.counts.done, 3);
    // a directory cairn did not make, not empty, is not taken as a results directory
    const foreign = join(s.dir, "foreign");
    mkdirSync(foreign);
    writeFileSync(join(foreign, "mine.txt"), "x");
    await assertCodeAsync(() => s.run("ok", { out: foreign }), "ROOT_FOREIGN");
    assert.deepEqual(readdirSync(foreign), ["mine.txt"]);
  });

  it("another campaign file against the same results directory is refused naming both plan digests; an edited plan is refused", async () => {
    const s = setup();
    const r = await s.run();
    writeCampaign(s.dir, RECORD.replace('"c\\n"', '"d\\n"'));
    const e = await assertCodeAsync(() => s.run(), "CAMPAIGN_MISMATCH", s.out);
    assert.ok(e.message.includes(r.plan.plan));
    assert.match(e.message, /sha256:[0-9a-f]{64}.*sha256:[0-9a-f]{64}/);
    writeCampaign(s.dir, RECORD);
    const planFile = join(s.out, "campaign.json");
    const text = readFileSync(planFile, "utf8");
    const edited = JSON.parse(text);
    edited.tasks[0].input.variant.run.steps[1].data = "evil\n";
    writeFileSync(planFile, JSON.stringify(edited));
    await assertCodeAsync(async () => readPlan(s.out), "CAMPAIGN_INVALID");
    writeFileSync(planFile, text); // control
    assert.equal(readPlan(s.out)?.plan, r.plan.plan);
  });

  it("a result forged to name a run outside runs/ is invalid, not done, and a replay campaign over it is refused (control: the others are done)", async () => {
    const s = setup();
    const r = await s.run();
    const [a] = r.plan.tasks.map((t) => t.id) as [string];
    const file = join(s.out, "tasks", a, "result.json");
    writeFileSync(file, readFileSync(file, "utf8").replace('"runs/20260101T000000Z-00000000"', '"runs/../../../etc"'));
    const p = campaignProgress(s.out, r.plan);
    assert.equal(p.tasks[0]!.verdict, "invalid");
    assert.deepEqual(p.counts, { done: 2, running: 0, failed: 1, pending: 0 });
    // the tasks a replay's `campaign:` entries make are counted against campaign.tasks as they are made (control: within it)
    const fan = writeCampaign(s.dir, "schema: cairn.campaign/1\nmode: replay\nruns: [{campaign: ./results}, {campaign: ./results}]\nrepeat: 2\n", "fan.yaml");
    writeFileSync(file, readFileSync(file, "utf8").replace('"runs/../../../etc"', '"runs/20260101T000000Z-00000000"'));
    const opts = { storeDir: join(s.dir, "store"), cairnVersion: "test" };
    const e = await assertCodeAsync(() => expandCampaign(readCampaignFile(fan), { ...opts, maxTasks: 11 }), "LIMIT_EXCEEDED", "/runs");
    assert.match(e.message, /campaign\.tasks/);
    // (the fake runs' directories do not exist: within the limit, the first is refused as not a recorded run)
    await assertCodeAsync(() => expandCampaign(readCampaignFile(fan), { ...opts, maxTasks: 12 }), "CAMPAIGN_INVALID", "/runs/0/campaign");
    writeFileSync(file, readFileSync(file, "utf8").replace('"runs/20260101T000000Z-00000000"', '"runs/../../../etc"'));
    const replay = writeCampaign(s.dir, "schema: cairn.campaign/1\nmode: replay\nruns: [{campaign: ./results}]\n", "replay.yaml");
    await assertCodeAsync(() => expandCampaign(readCampaignFile(replay), { storeDir: join(s.dir, "store"), cairnVersion: "test" }), "CAMPAIGN_INVALID");
  });

  it("a failure's words are printed with control characters escaped (an escape sequence cannot rewrite the terminal)", async () => {
    const s = setup(`${RECORD}retries: 0\n`);
    process.env.FAKE_STDERR = "\u001b[2Jforged\u0007";
    try {
      await s.run("fail-always");
    } finally {
      delete process.env.FAKE_STDERR;
    }
    const r = await runCli(["campaign", "report", s.out]);
    assert.equal(r.code, 0, r.stderr);
    // issue 36 item 4: the report and the status of a campaign with a failed task validate against their schemas
    for (const what of ["report", "status"]) {
      const j = await runCli(["campaign", what, s.out, "--json"]);
      assert.deepEqual(checkDocument(j.stdout, `cairn.cli.campaign-${what}/1`).problems, [], j.stdout);
    }
    assert.doesNotMatch(r.stdout, /[\u0000-\u0009\u000b-\u001f]/);
    assert.match(r.stdout, /\\u001b\[2Jforged\\u0007/);
  });

  it("runs at most --jobs tasks at once; the default leaves a core to cairn; an executor that is not built in is refused", async () => {
    const s = setup(`${RECORD.replace('"c\\n"', '"c\\n", "d\\n"')}`);
    let now = 0;
    let most = 0;
    const onEvent = (e: ExecutorEvent) => {
      if (e.kind === "started") most = Math.max(most, ++now);
      else now--;
    };
    await s.run("ok", { jobs: 2, onEvent });
    assert.ok(most <= 2 && most >= 1, `at most 2 at once, saw ${most}`);
    assert.equal(defaultJobs(4), 3);
    assert.equal(defaultJobs(1), 1);
    assert.equal((await executorByName("slurm", {})).name, "slurm");
    await assertCodeAsync(() => executorByName("condor"), "EXECUTOR_UNAVAILABLE", "--executor");
    assert.equal((await executorByName("local")).name, "local");
  });

  it("a task over resources.time-minutes is ended (SIGTERM, then its group) and reported naming the limit; control: a task within it publishes", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cairn-local-limit-"));
    try {
      const done = join(dir, "published");
      // the stand-in task: "fast" publishes at once, "slow" would sleep far past the limit (its group holds a child too)
      const launch = (id: string, script: string) => ({ id, argv: ["sh", "-c", script], published: () => existsSync(join(dir, id)) });
      const ends = await localExecutor.run({
        campaignDir: dir,
        tasks: [launch("fast", `touch ${join(dir, "fast")}`), launch("slow", `sleep 600 2>/dev/null & wait; touch ${join(dir, "slow")}`)],
        resources: { cpus: 1, memoryMiB: 64, timeMinutes: 0.02 }, // 1.2 s: the library takes a fraction, a campaign file whole minutes
        retries: 0,
        jobs: 2,
      });
      const byTask = new Map(ends.map((e) => [e.task, e]));
      assert.equal(byTask.get("fast")?.published, true, "control: within the limit it publishes");
      assert.equal(byTask.get("slow")?.published, false);
      assert.match(byTask.get("slow")?.failure ?? "", /over resources\.time-minutes \(0\.02 min\)/);
      assert.equal(existsSync(done), false);
      assert.equal(existsSync(join(dir, "slow")), false, "the task was ended, not left to finish");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
