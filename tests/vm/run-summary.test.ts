/**
 * `cairn runs list` and `cairn runs show` (issue 9, item 4, part): run
 * directories read through the strict, bounded manifest reader; each
 * replay's verdict from its result.json; a directory whose run.json is
 * refused is listed as unreadable with the code; the runs root's marker
 * and a symlink to a run are not runs (a symlink is never followed).
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { generateSigningKey, readSigningKey, readVerifyingKey, writeKeyPair } from "../../src/core/index.ts";
import { describeRun, listRuns, signReceipt } from "../../src/vm/index.ts";
import { writeRunOrigin } from "../../src/vm/run-origin.ts";
import { runCli } from "../helpers/cli.ts";
import { d, EVENTS, assertionsOf, manifest, writeRun } from "./fixtures/run-dirs.ts";

function runsDir(): string {
  const root = mkdtempSync(join(tmpdir(), "cairn-runs-"));
  const a = join(root, "20261201T000000Z-0000aaaa");
  writeRun(a, "20261201T000000Z-0000aaaa", true);
  mkdirSync(join(a, "replays", "1"), { recursive: true });
  mkdirSync(join(a, "replays", "2"));
  mkdirSync(join(a, "replays", "3"));
  // replay 1 as a replay writes it: its events and assertions, its result naming the outcome and status
  const m = manifest("20261201T000000Z-0000aaaa", true);
  writeFileSync(join(a, "replays", "1", "events.json"), JSON.stringify(EVENTS));
  writeFileSync(join(a, "replays", "1", "assertions.json"), JSON.stringify(assertionsOf(true)));
  writeFileSync(join(a, "replays", "1", "result.json"), JSON.stringify({ matches: true, outcome: m.outcome, status: m.status }));
  writeFileSync(join(a, "replays", "3", "result.json"), JSON.stringify({ matches: false }));
  // replay 4: a result planted to say "matched" with no replayed files; replay 5: one whose events say otherwise
  mkdirSync(join(a, "replays", "4"));
  writeFileSync(join(a, "replays", "4", "result.json"), JSON.stringify({ matches: true, outcome: m.outcome, status: m.status }));
  mkdirSync(join(a, "replays", "5"));
  writeFileSync(join(a, "replays", "5", "events.json"), JSON.stringify(EVENTS.map((e) => ({ ...e, planted: 1 }))));
  writeFileSync(join(a, "replays", "5", "assertions.json"), JSON.stringify(assertionsOf(true)));
  writeFileSync(join(a, "replays", "5", "result.json"), JSON.stringify({ matches: true, outcome: m.outcome, status: m.status }));
  const b = join(root, "20261201T000001Z-0000bbbb");
  writeRun(b, "20261201T000001Z-0000bbbb", false);
  writeFileSync(join(b, "run.json"), JSON.stringify({ ...manifest("20261201T000001Z-0000bbbb", false), extra: 1 }));
  writeFileSync(join(root, "cairn-runs.json"), "{}");
  symlinkSync(a, join(root, "zz-link"));
  return root;
}

describe("cairn runs list / show", () => {
  it("lists every run with its replays' verdicts (a result claiming a match its own files contradict is shown as such, issue 31 second pass; control: a replay's own files) and root; a refused manifest is listed unreadable; the marker and a symlink are not runs", () => {
    const root = runsDir();
    const { runs, unreadable } = listRuns(root);
    assert.deepEqual(
      runs.map((r) => [r.run_id, r.status, r.root, r.replays]),
      [["20261201T000000Z-0000aaaa", "passed", "disk", ["matched", "no-result", "differs", "contradicted", "contradicted"]]],
    );
    assert.deepEqual(unreadable, [{ dir: join(root, "20261201T000001Z-0000bbbb"), check: "invalid", error: "MODEL_UNKNOWN_FIELD" }]);
    // control: without the extra field that run is listed too
    writeFileSync(join(root, "20261201T000001Z-0000bbbb", "run.json"), JSON.stringify(manifest("20261201T000001Z-0000bbbb", false)));
    assert.deepEqual(
      listRuns(root).runs.map((r) => [r.run_id, r.root]),
      [
        ["20261201T000000Z-0000aaaa", "disk"],
        ["20261201T000001Z-0000bbbb", "initramfs"],
      ],
    );
    assert.deepEqual(listRuns(join(root, "absent")), { runs: [], unreadable: [] });
  });

  it("through the CLI: list, show by directory and by id, --json", async () => {
    const root = runsDir();
    const list = await runCli(["runs", "list", "--runs", root]);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /20261201T000000Z-0000aaaa {2}passed +unverified +2026-12-01T00:00:00Z +- +replays \+\?-!! +disk +origin unknown/);
    assert.match(list.stdout, /0000bbbb {2}invalid \(MODEL_UNKNOWN_FIELD\)/);
    const byId = await runCli(["runs", "show", "20261201T000000Z-0000aaaa", "--runs", root]);
    const byDir = await runCli(["runs", "show", join(root, "20261201T000000Z-0000aaaa")]);
    assert.equal(byId.code, 0, byId.stderr);
    assert.equal(byId.stdout, byDir.stdout);
    assert.match(byId.stdout, /replays {3}1: matched, 2: no result, 3: did not match, 4: claims a match its files contradict/);
    assert.match(byId.stdout, /\(disk root, 256 MiB\)/);
    const json = await runCli(["runs", "show", "--json", join(root, "20261201T000000Z-0000aaaa")]);
    assert.deepEqual(JSON.parse(json.stdout), {
      schema: "cairn.cli.runs-show/1",
      ...JSON.parse(JSON.stringify(describeRun(join(root, "20261201T000000Z-0000aaaa")))),
    });
    const missing = await runCli(["runs", "show", "nope", "--runs", root]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /RUN_INVALID|not a run directory/);
  });

  it("issue 31 case 17: an edited run is listed as tampered, naming what disagrees, never as its run.json says (control: the untouched run is unverified)", () => {
    const root = mkdtempSync(join(tmpdir(), "cairn-runs-"));
    const edits: Array<[string, (dir: string) => void, string]> = [
      // the case: a run whose assertions failed, edited to say passed
      ["status", (x) => edit(x, "run.json", (m) => ({ ...m, status: "passed" })), "/status"],
      ["outcome", (x) => edit(x, "run.json", (m) => ({ ...m, outcome: d("0") })), "/outcome"],
      ["events", (x) => edit(x, "events.json", (e) => e.map((v: { code?: number }) => (v.code === 3 ? { ...v, code: 0 } : v))), "/outcome"],
      ["assertions", (x) => edit(x, "assertions.json", (a) => a.map((v: object) => ({ ...v, ok: true }))), "/outcome"],
      ["vm", (x) => edit(x, "run.json", (m) => ({ ...m, vm: { ...m.vm, memory_mib: 512 } })), "/vm_digest"],
      ["log", (x) => writeFileSync(join(x, "replay.log"), Buffer.alloc(99, 7)), "/replay_log/size"],
      ["no-log", (x) => rmSync(join(x, "replay.log")), "/replay_log/size"],
      ["events-not-a-list", (x) => writeFileSync(join(x, "events.json"), "{}"), "events.json"],
      ["null-event", (x) => writeFileSync(join(x, "events.json"), "[null]"), "events.json"],
    ];
    for (const [name, change] of edits) {
      writeRun(join(root, `20261202T000000Z-${name}`), `20261202T000000Z-${name}`, false, false);
      change(join(root, `20261202T000000Z-${name}`));
    }
    writeRun(join(root, "20261202T000000Z-control"), "20261202T000000Z-control", false, false);
    const { runs, unreadable } = listRuns(root);
    assert.deepEqual(unreadable, []);
    const got = new Map(runs.map((r) => [r.run_id.slice(17), [r.check, r.problem]]));
    assert.deepEqual(got.get("control"), ["unverified", null]);
    for (const [name, , problem] of edits) assert.deepEqual(got.get(name), ["tampered", problem], name);
  });

  it("issue 31 case 17: with --pub, a run whose receipt verifies is signed; an edit only the receipt binds is tampered; another key's receipt vouches for nothing", async () => {
    const root = mkdtempSync(join(tmpdir(), "cairn-runs-"));
    const dir = join(root, "20261203T000000Z-signed");
    writeRun(dir, "20261203T000000Z-signed", false);
    const me = writeKeyPair(join(root, "me"), generateSigningKey(), false);
    const other = writeKeyPair(join(root, "other"), generateSigningKey(), false);
    signReceipt(dir, [readSigningKey(me.keyPath)]);
    const check = () => describeRun(dir, { keys: [readVerifyingKey(me.pubPath)] });
    assert.deepEqual([check().check, check().problem], ["signed", null]);
    assert.deepEqual([describeRun(dir).check, describeRun(dir, { keys: [readVerifyingKey(other.pubPath)] }).check], ["unverified", "unverified"]);
    // the replay log, same size, one byte changed: the cheap checks cannot see it, the receipt can
    writeFileSync(join(dir, "replay.log"), Buffer.concat([Buffer.alloc(99, 7), Buffer.from([8])]));
    assert.equal(describeRun(dir).check, "unverified");
    assert.deepEqual([check().check, check().problem], ["tampered", "receipt.dsse.json#/predicate/replay_log/sha256"]);
    const list = await runCli(["runs", "list", "--runs", root, "--pub", me.pubPath, "--json"]);
    assert.equal(JSON.parse(list.stdout).runs[0].check, "tampered");
  });

  it("issue 31 case 17: runs list shows where each run came from and filters by status, spec, identity, environment, time and check", async () => {
    const root = mkdtempSync(join(tmpdir(), "cairn-runs-"));
    const a = join(root, "20261204T000000Z-0000aaaa");
    const b = join(root, "20261205T000000Z-0000bbbb");
    const c = join(root, "20261206T000000Z-0000cccc");
    writeRun(a, "20261204T000000Z-0000aaaa", false);
    writeRun(b, "20261205T000000Z-0000bbbb", true, false);
    writeRun(c, "20261206T000000Z-0000cccc", false);
    edit(b, "run.json", (m) => ({ ...m, workload: { ...m.workload, workload: d("d") }, recorded: { ...m.recorded, at: "2026-12-05T10:00:00.000Z" } }));
    edit(c, "run.json", (m) => ({ ...m, status: "assertions-failed", recorded: { ...m.recorded, at: "2026-12-06T10:00:00.000Z" } }));
    writeRunOrigin(a, { via: "run", input: "/work/specs/hello.yaml", command: ["/bin/probe", "say hi"] });
    writeRunOrigin(b, { via: "bundle", input: "/tmp/in/run.cairn", command: null });
    writeFileSync(join(b, "environment.json"), JSON.stringify({ environment_id: d("e"), lockfile_sha256: d("f"), image_manifest: d("2") }));
    const ids = async (...args: string[]): Promise<string[]> => {
      const r = await runCli(["runs", "list", "--runs", root, "--json", ...args]);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      return (JSON.parse(r.stdout) as { runs: { run_id: string }[] }).runs.map((x) => x.run_id.slice(-4));
    };
    const text = await runCli(["runs", "list", "--runs", root]);
    assert.match(text.stdout, /0000aaaa {2}passed +unverified +2026-12-01T00:00:00Z +- +replays none +initramfs +hello\.yaml: \/bin\/probe 'say hi'\n/);
    assert.match(text.stdout, /0000bbbb {2}assertions-failed +unverified +2026-12-05T10:00:00Z +- +replays none +disk +bundle run\.cairn\n/);
    assert.match(text.stdout, /0000cccc {2}assertions-failed +tampered +2026-12-06T10:00:00Z +- +replays none +initramfs +origin unknown\n/);
    assert.deepEqual(await ids(), ["aaaa", "bbbb", "cccc"]);
    assert.deepEqual(await ids("--status", "assertions-failed"), ["bbbb", "cccc"]);
    assert.deepEqual(await ids("--spec", "hello.yaml"), ["aaaa"]);
    assert.deepEqual(await ids("--spec", "/tmp/in"), ["bbbb"]);
    assert.deepEqual(await ids("--workload", "dddddddd"), ["bbbb"]);
    assert.deepEqual(await ids("--workload", `sha256:${"2".repeat(64)}`), ["aaaa", "bbbb", "cccc"]);
    assert.deepEqual(await ids("--environment", `sha256:${"e".repeat(12)}`), ["bbbb"]);
    assert.deepEqual(await ids("--since", "2026-12-05"), ["bbbb", "cccc"]);
    assert.deepEqual(await ids("--since", "2026-12-06T09:00:00Z"), ["cccc"]);
    assert.deepEqual(await ids("--check", "tampered"), ["cccc"]);
    assert.deepEqual(await ids("--status", "passed", "--check", "unverified"), ["aaaa"]);
    // a refused flag is a usage error, not an empty list
    for (const bad of [
      ["--workload", "abc"],
      ["--since", "yesterday"],
      ["--check", "trusted"],
      ["--environment", "zz"],
    ]) {
      const r = await runCli(["runs", "list", "--runs", root, "--json", ...bad]);
      assert.equal(r.code, 2, bad.join(" "));
      assert.equal(JSON.parse(r.stdout).error.code, "USAGE");
    }
    const show = await runCli(["runs", "show", a]);
    assert.match(show.stdout, /origin {4}hello\.yaml: \/bin\/probe 'say hi' \(\/work\/specs\/hello\.yaml; written by this host, not covered by any digest\)/);
    assert.match(show.stdout, /check {5}unverified: /);
    const shown = await runCli(["runs", "show", c]);
    assert.match(shown.stdout, /status {4}assertions-failed \(as run\.json says; not to be believed\)\ncheck {5}tampered \(\/status\)/);
  });

  it("issue 36 item 4: runs list shows when recording began and how long QEMU ran (cost.json; - without it); --status takes statuses, several, or failed; --since a span back from now; a bad value is USAGE naming the flag", async () => {
    const root = mkdtempSync(join(tmpdir(), "cairn-runs-"));
    const a = join(root, "20261204T000000Z-0000aaaa");
    const b = join(root, "20261205T000000Z-0000bbbb");
    const c = join(root, "20261206T000000Z-0000cccc");
    writeRun(a, "20261204T000000Z-0000aaaa", false);
    writeRun(b, "20261205T000000Z-0000bbbb", false, false);
    writeRun(c, "20261206T000000Z-0000cccc", false);
    edit(a, "run.json", (m) => ({ ...m, recorded: { ...m.recorded, at: "2026-12-04T08:30:00.250Z" } }));
    edit(b, "run.json", (m) => ({ ...m, recorded: { ...m.recorded, at: "2026-12-05T10:00:00.000Z" } }));
    edit(c, "run.json", (m) => ({ ...m, status: "timeout", recorded: { ...m.recorded, at: "2026-12-06T10:00:00.000Z" } }));
    writeFileSync(join(a, "cost.json"), JSON.stringify({ wall_ms: 41_234, host_cpu_ms: 39_000 }));
    writeFileSync(join(b, "cost.json"), JSON.stringify({ wall_ms: 754_000, host_cpu_ms: null }));
    writeRunOrigin(a, { via: "run", input: "/work/specs/hello.yaml", command: ["/bin/probe", "say hi"] });
    const env = { ...process.env, CAIRN_NOW: "2026-12-06T12:00:00Z" };
    const list = async (...args: string[]) => runCli(["runs", "list", "--runs", root, ...args], env);
    const text = await list();
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /0000aaaa {2}passed +unverified +2026-12-04T08:30:00Z +41\.2s +replays none +initramfs +hello\.yaml: \/bin\/probe 'say hi'\n/);
    assert.match(text.stdout, /0000bbbb {2}assertions-failed +unverified +2026-12-05T10:00:00Z +12m34s +replays none/);
    assert.match(text.stdout, /0000cccc {2}timeout +[a-z]+ +2026-12-06T10:00:00Z +- +replays none/);
    const json = await list("--json");
    const runs = (JSON.parse(json.stdout) as { runs: { run_id: string; recorded_at: string; duration_ms: number | null; origin: unknown }[] }).runs;
    assert.deepEqual(
      runs.map((r) => [r.run_id.slice(-4), r.recorded_at, r.duration_ms]),
      [
        ["aaaa", "2026-12-04T08:30:00.250Z", 41_234],
        ["bbbb", "2026-12-05T10:00:00.000Z", 754_000],
        ["cccc", "2026-12-06T10:00:00.000Z", null],
      ],
    );
    assert.deepEqual(runs[0]!.origin, { via: "run", input: "/work/specs/hello.yaml", command: ["/bin/probe", "say hi"] });
    const ids = async (...args: string[]): Promise<string[]> => {
      const r = await list("--json", ...args);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      return (JSON.parse(r.stdout) as { runs: { run_id: string }[] }).runs.map((x) => x.run_id.slice(-4));
    };
    assert.deepEqual(await ids("--status", "failed"), ["bbbb", "cccc"]);
    assert.deepEqual(await ids("--status", "passed"), ["aaaa"]);
    assert.deepEqual(await ids("--status", "passed,timeout"), ["aaaa", "cccc"]);
    assert.deepEqual(await ids("--since", "30h"), ["bbbb", "cccc"]);
    assert.deepEqual(await ids("--since", "1d"), ["cccc"]);
    assert.deepEqual(await ids("--since", "2w"), ["aaaa", "bbbb", "cccc"]);
    assert.deepEqual(await ids("--since", "2026-12-05"), ["bbbb", "cccc"], "control: a date still works");
    for (const [flag, value] of [
      ["--status", "fail"],
      ["--status", "passed,"],
      ["--since", "3y"],
      ["--since", "0h"],
      ["--since", "-2d"],
      ["--since", "2026-02-30"],
      ["--since", "2026-04-31T10:00:00Z"],
    ] as const) {
      const r = await list("--json", flag, value);
      assert.equal(r.code, 2, `${flag} ${value}: ${r.stdout}`);
      const e = (JSON.parse(r.stdout) as { error: { code: string; path: string; message: string } }).error;
      assert.deepEqual([e.code, e.path], ["USAGE", flag], `${flag} ${value}`);
      assert.match(e.message, flag === "--status" ? /passed, completed, .*failed/ : /24h/);
    }
  });
});

// biome-ignore lint/suspicious/noExplicitAny: a test edit of a JSON file whose shape the test wrote itself
function edit(dir: string, name: string, f: (v: any) => unknown): void {
  writeFileSync(join(dir, name), JSON.stringify(f(JSON.parse(readFileSync(join(dir, name), "utf8")))));
}
