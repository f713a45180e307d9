/**
 * `cairn explore` (issue 35 item 5), the done-when tried as a new user
 * would: examples/network/explore.yaml (the network example with one
 * checkpoint, its client built with gcc -static at test time) recorded with
 * `cairn run`, then `cairn explore RUN --at retrying --vary
 * examples/network/explore-vary.yaml --serve site` records the outage's end
 * at ten different events (the network back after the client's 1st … 10th
 * failed retry), each a branch from the one checkpoint; the report names
 * each branch, and its "differs at" is checked against the branch's and the
 * parent's own events.json; every branch replays twice, identically (its
 * protocol stream byte for byte). A variation whose tail does not parse is
 * reported as not recorded, never dropped; the parent's served directory is
 * required and checked by digest before QEMU starts.
 */
import assert from "node:assert/strict";
import { copyFileSync, cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { isCairnError } from "../../src/core/index.ts";
import type { ExploreResult } from "../../src/fleet/index.ts";
import { recordBranch, replayRun, type Kit, type RunManifest } from "../../src/vm/index.ts";
import { runCli } from "../helpers/cli.ts";
import { checkDocument } from "../helpers/json-schemas.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { buildProgramFrom, GCC_SKIP } from "../workload/fixtures/static-program.ts";
import { TEST_KIT_DIR, testKit, VM_SKIP } from "./fixtures/kit.ts";
import { SOCAT_SKIP } from "./fixtures/responder.ts";

const EXAMPLES = join(PROJECT_ROOT, "examples", "network");
let dir: string;
let env: NodeJS.ProcessEnv;
let kit: Kit;
let parentDir: string;
let report: ExploreResult;

const stdoutOf = (runDir: string) => readFileSync(join(runDir, "streams", "1.stdout"), "utf8");
const json = (file: string) => JSON.parse(readFileSync(file, "utf8")) as unknown;

describe("cairn explore: the network example's outage at ten events from one checkpoint", { skip: VM_SKIP || GCC_SKIP || SOCAT_SKIP }, () => {
  before(async () => {
    kit = await testKit();
    dir = mkdtempSync(join(tmpdir(), "cairn-explore-"));
    for (const f of ["explore.yaml", "explore-vary.yaml"]) copyFileSync(join(EXAMPLES, f), join(dir, f));
    cpSync(join(EXAMPLES, "site"), join(dir, "site"), { recursive: true });
    copyFileSync(buildProgramFrom(join(EXAMPLES, "http-client.c"), "static"), join(dir, "http-client"));
    env = { ...process.env, CAIRN_HOME: join(dir, "home"), CAIRN_KIT: TEST_KIT_DIR };
    const r = await runCli(["run", join(dir, "explore.yaml"), "--json"], env);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    parentDir = (JSON.parse(r.stdout) as { run_dir: string }).run_dir;
    const e = await runCli(["explore", parentDir, "--at", "retrying", "--vary", join(dir, "explore-vary.yaml"), "--serve", join(dir, "site"), "--json"], env);
    assert.equal(e.code, 0, e.stdout + e.stderr);
    const { doc, problems } = checkDocument(e.stdout, "cairn.cli.explore/1");
    assert.deepEqual(problems, []);
    report = doc as unknown as ExploreResult;
  });

  // each branch keeps a start snapshot of about 100 MB: not left in the temp dir
  after(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it("records ten branches, each a run of its parent's checkpoint whose client still met a dead network at its variation's retry", () => {
    const parent = json(join(parentDir, "run.json")) as RunManifest;
    assert.equal(parent.status, "passed");
    assert.deepEqual(
      parent.checkpoints?.taken.map((t) => t.name),
      ["retrying"],
    );
    assert.deepEqual(report.counts, { variations: 10, recorded: 10, not_recorded: 0, differ: report.branches.filter((b) => b.differs?.from_parent).length });
    assert.equal(report.parent.run_id, parent.run_id);
    for (const [i, b] of report.branches.entries()) {
      const k = i + 1;
      assert.equal(b.variation, `/steps/0/after/contains=fetch 2 attempt ${k}:`);
      assert.equal(b.status, "passed", `${b.variation}: ${JSON.stringify(b.error)}`);
      assert.deepEqual(b.exit_codes, [0]);
      const m = json(join(b.run_dir!, "run.json")) as RunManifest;
      assert.equal(m.run_id, b.run_id);
      assert.deepEqual(m.branch?.parent, { run_id: parent.run_id, outcome: parent.outcome });
      assert.equal(m.branch?.checkpoint.name, "retrying");
      assert.equal(m.outcome, b.outcome);
      // the tail the branch recorded is its variation's: network-up after the k-th failed retry
      assert.equal((json(join(b.run_dir!, "branch.json")) as { steps: { after?: { contains: string } }[] }).steps[0]?.after?.contains, `fetch 2 attempt ${k}:`);
      const out = stdoutOf(b.run_dir!).split("\n");
      assert.equal(out[0], "fetch 1: 200 hello over the network");
      assert.ok(
        out.includes(`fetch 2 attempt ${k}: Network is unreachable`),
        `${b.variation}: the network was still down at the k-th retry\n${out.join("\n")}`,
      );
      assert.deepEqual(out.slice(-3), ["fetch 2: 200 hello over the network", "echo: ping", ""]);
    }
    // where the network came back is at or after the variation's event, never before: the host acts once it sees the
    // output, and the guest's clock runs on meanwhile (icount sleep=on), so under load several retries pass first
    const failed = report.branches.map(
      (b) =>
        stdoutOf(b.run_dir!)
          .split("\n")
          .filter((l) => l.startsWith("fetch 2 attempt")).length,
    );
    for (const [i, n] of failed.entries()) assert.ok(n >= i + 1, `failed retries per branch: ${failed}`);
  });

  it("says whether each outcome differs from the parent's and where, as the two runs' own events.json and assertions.json show", () => {
    const parentEvents = json(join(parentDir, "events.json")) as unknown[];
    const parentAssertions = json(join(parentDir, "assertions.json")) as unknown[];
    const parentOutcome = (json(join(parentDir, "run.json")) as RunManifest).outcome;
    for (const b of report.branches) {
      const events = json(join(b.run_dir!, "events.json")) as unknown[];
      const assertions = json(join(b.run_dir!, "assertions.json")) as unknown[];
      if (b.outcome === parentOutcome) {
        assert.deepEqual(b.differs, { from_parent: false, at: null });
        assert.deepEqual(events, parentEvents);
        continue;
      }
      assert.equal(b.differs?.from_parent, true);
      const at = /^\/events\/(\d+)$/.exec(b.differs?.at ?? "");
      assert.ok(at !== null, `${b.variation}: ${b.differs?.at} (the assertions are the same checks, so an event differs)`);
      const n = Number(at[1]);
      assert.deepEqual(events.slice(0, n), parentEvents.slice(0, n), `${b.variation}: the events before ${n} are the parent's`);
      assert.notDeepEqual(events[n], parentEvents[n], `${b.variation}: event ${n} differs`);
      assert.equal(assertions.length, parentAssertions.length);
    }
    // the branch whose network stays down longest prints more than the parent: its exit event (stdout's size and digest) differs
    assert.equal(report.branches[9]?.differs?.from_parent, true);
  });

  it("every branch replays twice, identically: verdict, outcome and the protocol stream byte for byte", async () => {
    const store = join(dir, "home", "store");
    for (const b of report.branches) {
      // the branch's stream is the parent's up to the hold (branch-prefix.bin), then its own; a replay's protocol.bin is its own part
      const protocol = readFileSync(join(b.run_dir!, "protocol.bin"));
      const prefix = readFileSync(join(b.run_dir!, "branch-prefix.bin"));
      for (let i = 1; i <= 2; i++) {
        const r = await replayRun({ runDir: b.run_dir!, storeDir: store, kit });
        assert.equal(r.verdict.matches, true, `${b.variation}, replay ${i}`);
        assert.equal(r.evaluation.outcome, b.outcome);
        const replayed = Buffer.concat([prefix, readFileSync(join(b.run_dir!, "replays", String(i), "protocol.bin"))]);
        assert.ok(replayed.equals(protocol), `${b.variation}, replay ${i}: protocol stream`);
      }
    }
  });

  it("a variation whose tail does not parse is reported as not recorded, with its code and pointer, never dropped; the command exits 1", async () => {
    const vary = join(dir, "bad-vary.yaml");
    writeFileSync(
      vary,
      'steps:\n  - action: network-up\n    after: {output: stdout, contains: "x"}\n  - action: close-stdin\nvary:\n  - set: /steps/0/after/contains\n    values: ["", 42]\n',
    );
    const runs = join(dir, "home", "runs");
    const before = readdirSync(runs).length;
    const r = await runCli(["explore", parentDir, "--at", "retrying", "--vary", vary, "--serve", join(dir, "site"), "--json"], env);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const { doc, problems } = checkDocument(r.stdout, "cairn.cli.explore/1");
    assert.deepEqual(problems, []);
    const bad = doc as unknown as ExploreResult;
    assert.deepEqual(bad.counts, { variations: 2, recorded: 0, not_recorded: 2, differ: 0 });
    assert.deepEqual(
      bad.branches.map((b) => [b.variation, b.status, b.run_id, b.error?.code, b.error?.path]),
      [
        ["/steps/0/after/contains=", "not-recorded", null, "MODEL_VALUE", "/steps/0/after/contains"],
        ["/steps/0/after/contains=42", "not-recorded", null, "MODEL_TYPE", "/steps/0/after/contains"],
      ],
    );
    assert.equal(readdirSync(runs).length, before, "no run directory, no staging left");
    const text = await runCli(["explore", parentDir, "--at", "retrying", "--vary", vary, "--serve", join(dir, "site")], env);
    assert.equal(text.code, 1);
    assert.match(text.stdout, /2 variations: 0 recorded, 2 not recorded/);
  });

  it("the parent's served directory: refused when not given or not the one it served, before QEMU (control: the explore above)", async () => {
    const tail = join(dir, "tail.yaml");
    writeFileSync(tail, 'steps:\n  - action: network-up\n  - action: close-stdin\n    after: {output: stdout, contains: "echo:"}\n');
    const runsDir = join(dir, "home", "runs");
    const base = { runDir: parentDir, checkpoint: "retrying", scenario: tail, storeDir: join(dir, "home", "store"), runsDir, kit, cairnVersion: "test" };
    const before = readdirSync(runsDir).length;
    await assert.rejects(recordBranch(base), (e: unknown) => isCairnError(e) && e.code === "RUN_INVALID" && e.path === "--serve");
    const other = join(dir, "other-site");
    cpSync(join(dir, "site"), other, { recursive: true });
    writeFileSync(join(other, "hello.txt"), "hello from elsewhere\n");
    await assert.rejects(
      recordBranch({ ...base, served: other }),
      (e: unknown) => isCairnError(e) && e.code === "REPLAY_MISMATCH" && e.path === "/vm/network/responders/0/root",
    );
    assert.equal(readdirSync(runsDir).length, before, "nothing recorded");
  });
});
