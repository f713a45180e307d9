/**
 * Issue 34 end to end on the local executor, with real runs: the network
 * example (examples/network/http.yaml, its client built with gcc -static
 * at test time) recorded over a 2x1 matrix of its outage step, the record
 * campaign replayed (every replay matching), a replay that cannot match
 * reported as a finding naming the field, and the signed campaign receipt
 * verified offline; a result or run edited afterwards is reported as such
 * and not counted. The tasks run as `bin/cairn.js campaign task`, so this
 * worktree's dist/ must be built (npm run build).
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { copyFileSync, cpSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { describe, it } from "node:test";
import { generateSigningKey, writeKeyPair } from "../../src/core/index.ts";
import { vmDigest, verifyReceipt, type RunManifest } from "../../src/vm/index.ts";
import { runCli } from "../helpers/cli.ts";
import { checkDocument } from "../helpers/json-schemas.ts";
import { publishLstreeLayer } from "../helpers/lstree-layer.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { buildProgramFrom, GCC_SKIP } from "../workload/fixtures/static-program.ts";
import { TEST_KIT_DIR, testKit, VM_SKIP } from "../vm/fixtures/kit.ts";
import { SOCAT_SKIP } from "../vm/fixtures/responder.ts";
import { exampleRegistry } from "../strata/fixtures.ts";

const EXAMPLES = join(PROJECT_ROOT, "examples", "network");

interface Summary {
  dir: string;
  plan: string;
  tasks: number;
  counts: Record<string, number>;
  verdicts: Record<string, number>;
}

interface ReportLine {
  task: string;
  verdict: string;
  field: string | null;
  status: string | null;
  run: string;
  duration_ms: number;
  guest_instructions: number | null;
  identities: { workload: string; vm: string; outcome: string; run_id: string };
}

describe("campaigns of real runs on the local executor", { skip: VM_SKIP || GCC_SKIP || SOCAT_SKIP }, () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-fleet-vm-"));
  const env = { ...process.env, CAIRN_HOME: join(dir, "home"), CAIRN_KIT: TEST_KIT_DIR };
  const { keyPath, pubPath } = writeKeyPair(join(dir, "k"), generateSigningKey());
  const other = writeKeyPair(join(dir, "other"), generateSigningKey());
  const cli = (args: string[]) => runCli(args, env);
  const report = async (out: string) => {
    const r = await cli(["campaign", "report", out, "--json"]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.deepEqual(checkDocument(r.stdout, "cairn.cli.campaign-report/1").problems, [], r.stdout);
    return JSON.parse(r.stdout) as { tasks: ReportLine[]; counts: Record<string, number> };
  };

  it("records a 2x1 matrix of the outage step, replays the campaign (every replay matching), and both receipts verify offline", async () => {
    await testKit();
    copyFileSync(join(EXAMPLES, "http.yaml"), join(dir, "http.yaml"));
    cpSync(join(EXAMPLES, "site"), join(dir, "site"), { recursive: true });
    copyFileSync(buildProgramFrom(join(EXAMPLES, "http-client.c"), "static"), join(dir, "http-client"));
    writeFileSync(
      join(dir, "record.yaml"),
      'schema: cairn.campaign/1\nmode: record\nruns: [{spec: ./http.yaml}]\nmatrix:\n  - set: /run/steps/1/after/contains\n    values: ["fetch 1: 200", "fetch 1:"]\n',
    );
    const rec = await cli(["campaign", "run", join(dir, "record.yaml"), "--key", keyPath, "--jobs", "2", "--out", join(dir, "rec"), "--json"]);
    assert.equal(rec.code, 0, rec.stdout + rec.stderr);
    assert.deepEqual(checkDocument(rec.stdout, "cairn.cli.campaign-run/1").problems, [], rec.stdout);
    const recorded = JSON.parse(rec.stdout) as Summary;
    assert.deepEqual(recorded.verdicts, { recorded: 2 });
    const lines = (await report(join(dir, "rec"))).tasks;
    for (const t of lines) {
      assert.equal(t.status, "passed");
      assert.ok((t.guest_instructions ?? 0) > 0);
      const runDir = join(dir, "rec", t.run);
      const m = JSON.parse(readFileSync(join(runDir, "run.json"), "utf8")) as RunManifest;
      assert.equal(m.vm_digest, t.identities.vm);
      assert.equal(m.outcome, t.identities.outcome);
      // the run's own receipt, signed by the task with the campaign's key, binds the run directory
      assert.equal(
        verifyReceipt(join(runDir, "receipt.dsse.json"), [(await import("../../src/core/index.ts")).readVerifyingKey(pubPath)], runDir).runChecked,
        true,
      );
    }
    assert.notEqual(lines[0]!.identities.vm, lines[1]!.identities.vm, "the scenario is in the VM identity");
    assert.equal(lines[0]!.identities.workload, lines[1]!.identities.workload, "one workload");
    const v = await cli(["campaign", "verify", join(dir, "rec"), "--pub", pubPath, "--json"]);
    assert.equal(v.code, 0, v.stdout + v.stderr);
    assert.deepEqual(checkDocument(v.stdout, "cairn.cli.campaign-verify/1").problems, [], v.stdout);
    assert.equal((JSON.parse(v.stdout) as { tasks_verified: number }).tasks_verified, 2);

    writeFileSync(join(dir, "replay.yaml"), "schema: cairn.campaign/1\nmode: replay\nruns: [{campaign: ./rec}]\n");
    const rep = await cli(["campaign", "run", join(dir, "replay.yaml"), "--key", keyPath, "--jobs", "2", "--out", join(dir, "rep"), "--json"]);
    assert.equal(rep.code, 0, rep.stdout + rep.stderr);
    assert.deepEqual((JSON.parse(rep.stdout) as Summary).verdicts, { matched: 2 });
    const replayed = (await report(join(dir, "rep"))).tasks;
    assert.deepEqual(replayed.map((t) => t.identities.outcome).sort(), lines.map((t) => t.identities.outcome).sort());
    const vr = await cli(["campaign", "verify", join(dir, "rep"), "--pub", pubPath]);
    assert.equal(vr.code, 0, vr.stdout + vr.stderr);
    // the same campaign again: nothing to run
    const again = await cli(["campaign", "run", join(dir, "replay.yaml"), "--key", keyPath, "--out", join(dir, "rep"), "--json"]);
    assert.equal(again.code, 0, again.stdout + again.stderr);
    assert.equal((JSON.parse(again.stdout) as { ran: number; skipped: number }).ran, 0);
    // the HTML report is one static page: no script
    const html = join(dir, "report.html");
    assert.equal((await cli(["campaign", "report", join(dir, "rep"), "--html", html])).code, 0);
    const page = readFileSync(html, "utf8");
    assert.doesNotMatch(page, /<script|src=|href=/i);
    assert.match(page, /matched/);
  });

  it("a replay that cannot match is a finding naming the field, reported and not a pass", async () => {
    const lines = (await report(join(dir, "rec"))).tasks;
    const copy = join(dir, "edited-run");
    cpSync(join(dir, "rec", lines[0]!.run), copy, { recursive: true });
    const file = join(copy, "run.json");
    const m = JSON.parse(readFileSync(file, "utf8")) as RunManifest & { vm: { qemu: string } };
    m.vm.qemu = "0.0.0 (not this host's)";
    (m as { vm_digest: string }).vm_digest = vmDigest(m.vm);
    writeFileSync(file, JSON.stringify(m, null, 2));
    writeFileSync(join(dir, "mismatch.yaml"), "schema: cairn.campaign/1\nmode: replay\nruns: [{run: ./edited-run}]\n");
    const r = await cli(["campaign", "run", join(dir, "mismatch.yaml"), "--key", keyPath, "--out", join(dir, "mis"), "--json"]);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const out = JSON.parse(r.stdout) as { error: { code: string }; campaign: Summary };
    assert.equal(out.error.code, "REPLAY_MISMATCH");
    assert.deepEqual(out.campaign.verdicts, { mismatched: 1 });
    const [t] = (await report(join(dir, "mis"))).tasks;
    assert.equal(t!.verdict, "mismatched");
    assert.equal(t!.field, "/vm/qemu");
  });

  it("a task result or a run edited after the campaign, or another key, fails campaign verify naming the task (control: before the edit it verifies)", async () => {
    const out = join(dir, "rec");
    const ok = await cli(["campaign", "verify", out, "--pub", pubPath, "--json"]);
    assert.equal(ok.code, 0, ok.stdout);
    const wrongKey = await cli(["campaign", "verify", out, "--pub", other.pubPath, "--json"]);
    assert.equal(wrongKey.code, 1);
    const lines = (await report(out)).tasks;
    const resultFile = join(out, "tasks", lines[0]!.task, "result.json");
    const original = readFileSync(resultFile, "utf8");
    writeFileSync(resultFile, original.replace('"duration_ms": ', '"duration_ms": 1'));
    const edited = await cli(["campaign", "verify", out, "--pub", pubPath, "--json"]);
    assert.equal(edited.code, 1, edited.stdout);
    const body = JSON.parse(edited.stdout) as {
      error: { code: string };
      campaign: { problems: { task: string | null; problem: string }[]; tasks_verified: number };
    };
    assert.equal(body.error.code, "CAMPAIGN_MISMATCH");
    assert.equal(body.campaign.tasks_verified, 1, "the edited task is not counted");
    assert.ok(body.campaign.problems.some((p) => p.task === lines[0]!.task && /edited/.test(p.problem)));
    writeFileSync(resultFile, original);
    // a run directory edited after the task: its events no longer give the statement the result binds
    const events = join(out, lines[1]!.run, "events.json");
    const ev = readFileSync(events, "utf8");
    writeFileSync(events, `${ev} `); // one byte more: still JSON, another sha256
    const run = await cli(["campaign", "verify", out, "--pub", pubPath, "--json"]);
    assert.equal(run.code, 1, run.stdout);
    assert.ok((JSON.parse(run.stdout) as { campaign: { problems: { task: string }[] } }).campaign.problems.some((p) => p.task === lines[1]!.task));
    writeFileSync(events, ev);
    assert.equal((await cli(["campaign", "verify", out, "--pub", pubPath])).code, 0, "control: restored, it verifies");
  });
});

describe("a lock entry in a record campaign, recorded for real", { skip: VM_SKIP || GCC_SKIP }, () => {
  it("verifies and exports the lockfile under the entry's policy, records it as `cairn run LOCKFILE` does, and the run is the workload its task names", async () => {
    await testKit();
    const ex = exampleRegistry();
    const env = { ...process.env, CAIRN_HOME: join(ex.root, "home"), CAIRN_KIT: TEST_KIT_DIR };
    publishLstreeLayer(ex);
    const profile = join(ex.root, "profile.yaml");
    writeFileSync(profile, readFileSync(join(PROJECT_ROOT, "examples/strata/profile.yaml"), "utf8").replace("  - numpy\n", "  - numpy\n  - lstree\n"));
    const lock = join(ex.root, "env.lock");
    const resolved = await runCli(
      [
        "resolve",
        profile,
        "--registry",
        ex.registry,
        "--base",
        `rootfs:${ex.rootfs}`,
        "--trust",
        `keyfile://${ex.root}/registry.pub`,
        "--sign",
        join(ex.root, "lock.key"),
        "--out",
        lock,
      ],
      env,
    );
    assert.equal(resolved.code, 0, resolved.stderr);
    const { keyPath } = writeKeyPair(join(ex.root, "campaign"), generateSigningKey());
    // paths relative to the campaign file, as a user writes them
    const campaign = join(ex.root, "lock-campaign.yaml");
    writeFileSync(
      campaign,
      `schema: cairn.campaign/1\nmode: record\nruns:\n  - {lock: ./env.lock, pub: ./lock.pub, registry: ./${relative(ex.root, ex.registry)}, base: "rootfs:./${relative(ex.root, ex.rootfs)}", cmd: [/usr/local/bin/lstree]}\n`,
    );
    const out = join(ex.root, "rec");
    const rec = await runCli(["campaign", "run", campaign, "--key", keyPath, "--out", out, "--json"], env);
    assert.equal(rec.code, 0, rec.stdout + rec.stderr);
    assert.deepEqual((JSON.parse(rec.stdout) as Summary).verdicts, { recorded: 1 });
    const plan = JSON.parse(readFileSync(join(out, "campaign.json"), "utf8")) as { tasks: { id: string; identity: { workload: { workload: string } } }[] };
    const r = await runCli(["campaign", "report", out, "--json"], env);
    const [line] = (JSON.parse(r.stdout) as { tasks: ReportLine[] }).tasks;
    assert.ok(line !== undefined);
    assert.equal(line.status, "passed");
    assert.equal(line.identities.workload, plan.tasks[0]!.identity.workload.workload, "the run is the workload the task's name covers");
    const runDir = join(out, line.run);
    // the run names the lockfile it exported (its bytes' sha256, computed here) and the program ran in the guest
    const environment = JSON.parse(readFileSync(join(runDir, "environment.json"), "utf8")) as { lockfile_sha256: string };
    assert.equal(environment.lockfile_sha256.replace(/^sha256:/, ""), createHash("sha256").update(readFileSync(lock)).digest("hex"));
    assert.match(readFileSync(join(runDir, "streams", "1.stdout"), "utf8"), /^f \/usr\/local\/bin\/lstree$/m);
  });
});
