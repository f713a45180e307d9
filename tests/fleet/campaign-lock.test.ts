/**
 * Issue 34: one `campaign run` at a time on a results directory
 * (src/fleet/campaign-lock.ts). A second run while the first runs is
 * refused (CAMPAIGN_BUSY naming the holder) and starts no task; once the
 * first ends its lock is gone and a run proceeds (the control). A holder
 * interrupted (SIGINT) releases it; a holder killed (SIGKILL) leaves it, and
 * the next run takes it over, saying so; a live holder, another host's lock
 * and a file cairn did not write are refused. No VM: the tasks are the
 * stand-in of fixtures/fake-task.ts.
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { generateSigningKey, writeKeyPair } from "../../src/core/index.ts";
import { LOCK_SCHEMA, localExecutor, lockCampaign, openResults, runCampaign, stagingHost } from "../../src/fleet/index.ts";
import { processStartTime } from "../../src/vm/index.ts";
import { assertCode, assertCodeAsync } from "../helpers/errors.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { GCC_SKIP } from "../workload/fixtures/static-program.ts";
import { helloDir, writeCampaign } from "./fixtures/campaigns.ts";

const FAKE = join(PROJECT_ROOT, "tests", "fleet", "fixtures", "fake-task.ts");
const RECORD = 'schema: cairn.campaign/1\nmode: record\nruns: [{spec: ./hello.yaml}]\nmatrix:\n  - set: /run/steps/1/data\n    values: ["a\\n", "b\\n"]\n';

async function until(what: () => boolean): Promise<void> {
  while (!what()) await new Promise((r) => setTimeout(r, 10));
}

/** A process holding DIR's lock until it is signalled (the library, as `campaign run` takes it). */
function holder(dir: string): Promise<ChildProcess> {
  const code = `const f = await import(${JSON.stringify(join(PROJECT_ROOT, "src/fleet/index.ts"))});
f.lockCampaign(process.argv[1]); process.stdout.write("locked\\n"); setInterval(() => {}, 1 << 30);`;
  const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code, dir], {
    cwd: PROJECT_ROOT,
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    child.stdout!.on("data", (d: Buffer) => void (d.toString().includes("locked") && resolve(child)));
    child.on("exit", (c) => reject(new Error(`holder exited ${c}`)));
  });
}

const exited = (c: ChildProcess) => new Promise((r) => (c.exitCode !== null || c.signalCode !== null ? r(undefined) : c.on("exit", r)));

describe("one campaign run at a time on a results directory", { skip: GCC_SKIP }, () => {
  it("a second campaign run while the first runs is refused naming the holder and starts nothing; after the first ends a run proceeds", async () => {
    const dir = helloDir();
    const { keyPath } = writeKeyPair(join(dir, "k"), generateSigningKey());
    const key = generateSigningKey();
    const file = writeCampaign(dir, RECORD);
    const out = join(dir, "results");
    const log = join(dir, "fake.log");
    writeFileSync(log, "");
    process.env.FAKE_LOG = log;
    const opts = {
      file,
      out,
      executor: localExecutor,
      jobs: 1,
      storeDir: join(dir, "store"),
      cairnVersion: "test",
      key,
      taskArgv: (d: string, id: string) => [process.execPath, "--import", "tsx", FAKE, d, id, keyPath],
    };
    // the first run's first task hangs until it is killed; its retry (FAKE_TASK is read at each start) publishes
    process.env.FAKE_TASK = "hang=";
    const first = runCampaign(opts);
    await until(() => existsSync(`${log}.hang`));
    const lockFile = join(out, "campaign.lock");
    assert.ok(existsSync(lockFile), "the first run holds the lock");
    process.env.FAKE_TASK = "ok";
    const starts = readFileSync(log, "utf8");
    try {
      const e = await assertCodeAsync(() => runCampaign(opts), "CAMPAIGN_BUSY", lockFile);
      assert.match(e.message, new RegExp(`pid ${process.pid}\\b`));
      assert.equal(readFileSync(log, "utf8"), starts, "the refused run started no task");
    } finally {
      process.kill(Number(readFileSync(`${log}.hang`, "utf8")), "SIGKILL");
    }
    const r = await first;
    assert.deepEqual(
      r.ends.map((x) => x.published),
      [true, true],
    );
    assert.equal(existsSync(lockFile), false, "released when the run ended");
    // control: now a run proceeds (nothing left to run)
    const again = await runCampaign(opts);
    assert.equal(again.skipped, 2);
    assert.equal(existsSync(lockFile), false);
  });

  it("an interrupted holder releases the lock; a killed one leaves it, and the next run takes it over saying so; a live holder is refused", async () => {
    const dir = join(helloDir(), "results");
    openResults(dir, true);
    const lockFile = join(dir, "campaign.lock");
    const a = await holder(dir);
    // a live holder in another process: refused, named
    const e = assertCode(() => lockCampaign(dir), "CAMPAIGN_BUSY", lockFile);
    assert.match(e.message, new RegExp(`host ${stagingHost()}, pid ${a.pid}\\b`));
    a.kill("SIGINT");
    await exited(a);
    assert.equal(existsSync(lockFile), false, "released on SIGINT (vm/interrupt.ts)");

    const b = await holder(dir);
    b.kill("SIGKILL");
    await exited(b);
    assert.ok(existsSync(lockFile), "a killed holder could not release it");
    const said: string[] = [];
    const mine = lockCampaign(dir, (l) => said.push(l));
    assert.equal(said.length, 1);
    assert.match(said[0]!, new RegExp(`took over the lock of host ${stagingHost()}, pid ${b.pid}\\b`));
    assert.equal((JSON.parse(readFileSync(lockFile, "utf8")) as { pid: number }).pid, process.pid);
    mine.release();
    assert.equal(existsSync(lockFile), false);
  });

  it("a reused pid is not the holder; another host's lock and a file cairn did not write are refused", () => {
    const dir = join(helloDir(), "results");
    openResults(dir, true);
    const lockFile = join(dir, "campaign.lock");
    const plant = (o: object | string) => writeFileSync(lockFile, typeof o === "string" ? o : JSON.stringify({ schema: LOCK_SCHEMA, token: "t", ...o }));
    // this very process, but started at another time: the pid was reused, the holder is gone
    plant({ host: stagingHost(), pid: process.pid, start: "1" });
    const said: string[] = [];
    lockCampaign(dir, (l) => said.push(l)).release();
    assert.equal(said.length, 1);
    // control: the same pid with its real start time is alive
    plant({ host: stagingHost(), pid: process.pid, start: processStartTime(process.pid)! });
    assertCode(() => lockCampaign(dir), "CAMPAIGN_BUSY", lockFile);
    plant({ host: "another-node", pid: 999999999, start: "1" });
    const other = assertCode(() => lockCampaign(dir), "CAMPAIGN_BUSY", lockFile);
    assert.match(other.message, /another-node/);
    assert.match(other.hint ?? "", /another host/);
    plant("not json");
    assertCode(() => lockCampaign(dir), "CAMPAIGN_BUSY", lockFile);
    assert.equal(readFileSync(lockFile, "utf8"), "not json", "a refused run leaves the file as it was");
  });
});
