/**
 * `cairn runs show RUN --html OUT` and `--trace OUT.json` (issue 36, item 1)
 * on one real run: the bundled example workload (examples/workload/hello),
 * recorded and replayed once under QEMU, then shown. Each page is opened in
 * a real browser (Debian's chromium, tests/helpers/browser.ts) and must load
 * with no console error and no request but its own file; its timeline must
 * show every event of the run's events.json; a replay that did not match
 * must be shown at the field that differed. The mismatching replay is the
 * real replay's directory with one field of one event altered, read through
 * the same library code as any replay (run-summary.ts, replay-diff.ts).
 *
 * With CAIRN_UPDATE_DOCS=1 the page's screenshot is written to
 * docs/pictures/run.png, the picture the README shows.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { Browser, chromiumMissing } from "../helpers/browser.ts";
import { runCli } from "../helpers/cli.ts";
import { needs } from "../helpers/prerequisites.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { TEST_KIT_DIR, testKit, VM_SKIP } from "../vm/fixtures/kit.ts";

const SKIP = VM_SKIP || needs(chromiumMissing());

describe("runs show --html and --trace on a recorded example run", { skip: SKIP }, () => {
  let dir: string;
  let runDir: string;
  let browser: Browser;
  let events: Array<Record<string, unknown>>;

  before(async () => {
    await testKit();
    dir = mkdtempSync(join(tmpdir(), "cairn-runs-html-"));
    const ws = join(dir, "workload");
    mkdirSync(ws);
    for (const f of ["hello.c", "hello.yaml"]) copyFileSync(join(PROJECT_ROOT, "examples", "workload", f), join(ws, f));
    const gcc = spawnSync("gcc", ["-static", "-no-pie", "-O2", "-o", join(ws, "hello"), join(ws, "hello.c")], { encoding: "utf8" });
    assert.equal(gcc.status, 0, gcc.stderr);
    const common = ["--store", join(dir, "store"), "--kit", TEST_KIT_DIR];
    const rec = await runCli(["run", join(ws, "hello.yaml"), "--runs", join(dir, "runs"), ...common, "--json"]);
    assert.equal(rec.code, 0, rec.stdout + rec.stderr);
    const [id] = readdirSync(join(dir, "runs")).filter((n) => !n.startsWith("."));
    runDir = join(dir, "runs", id!);
    const rep = await runCli(["replay", runDir, ...common, "--json"]);
    assert.equal(rep.code, 0, rep.stdout + rep.stderr);
    events = JSON.parse(readFileSync(join(runDir, "events.json"), "utf8"));
    browser = await Browser.launch();
  });
  after(async () => {
    await browser?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it("the page loads with no console error and no request, and its timeline shows every event of the run", async () => {
    const page = join(dir, "run.html");
    const r = await runCli(["runs", "show", runDir, "--html", page]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.equal(statSync(page).mode & 0o777, 0o644);
    const p = await browser.openPage(page);
    assert.deepEqual(p.problems, [], "no console error, exception or log error");
    assert.deepEqual(p.requests, [`file://${page}`], "no request but the page's own file");
    assert.ok(events.length >= 3, `the run has events (${events.length})`);
    // every event is one mark on the timeline and one row of the table, in order
    assert.deepEqual(
      await p.evaluate<string[]>("[...document.querySelectorAll('svg circle.event')].map((c) => c.dataset.index + ' ' + c.dataset.event)"),
      events.map((e, i) => `${i} ${e.event}`),
    );
    assert.equal(await p.evaluate<number>("document.querySelectorAll('tr.event-row').length"), events.length);
    // an invocation is a bar on its lane
    assert.equal(
      await p.evaluate<number>("document.querySelectorAll('svg rect.span').length"),
      new Set(events.map((e) => e.invocation).filter((i) => i !== 0)).size,
    );
    assert.equal(await p.evaluate<string>("document.querySelector('.replay').dataset.verdict"), "matched");
    assert.equal(await p.evaluate<number>("document.querySelectorAll('.differs').length"), 0, "control: a matching replay marks nothing");
    const text = await p.evaluate<string>("document.body.innerText");
    const run = JSON.parse(readFileSync(join(runDir, "run.json"), "utf8"));
    for (const d of [run.workload.workload, run.workload.fs, run.workload.launch, run.vm_digest, run.outcome])
      assert.ok(text.includes(d), `identity ${d} shown`);
    assert.match(text, /guest instructions\s+[0-9,]+/);
    assert.doesNotMatch(text, /hello from/, "the private output is not in the page without --private");
    if (process.env.CAIRN_UPDATE_DOCS === "1") {
      mkdirSync(join(PROJECT_ROOT, "docs", "pictures"), { recursive: true });
      writeFileSync(join(PROJECT_ROOT, "docs", "pictures", "run.png"), await p.screenshot(1000));
    }
  });

  it("with --private the page shows an excerpt of the output and is written owner-only", async () => {
    const page = join(dir, "private.html");
    const r = await runCli(["runs", "show", runDir, "--html", page, "--private"]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.equal(statSync(page).mode & 0o777, 0o600);
    const p = await browser.openPage(page);
    assert.deepEqual(p.problems, []);
    assert.match(await p.evaluate<string>("document.querySelector('pre.excerpt').textContent"), /hello from .* world/);
    const usage = await runCli(["runs", "show", runDir, "--private", "--json"]);
    assert.equal(usage.code, 2, "--private without --html is a usage error");
  });

  it("a replay that did not match is shown at the field that differed", async () => {
    const copy = join(dir, "altered");
    cpSync(runDir, copy, { recursive: true });
    const replay = join(copy, "replays", "1");
    const replayed = JSON.parse(readFileSync(join(replay, "events.json"), "utf8")) as Array<Record<string, unknown>>;
    const at = replayed.findIndex((e) => e.event === "exit");
    assert.ok(at > 0, "the run has an exit event");
    replayed[at]!.code = 7;
    writeFileSync(join(replay, "events.json"), JSON.stringify(replayed));
    const result = JSON.parse(readFileSync(join(replay, "result.json"), "utf8"));
    writeFileSync(join(replay, "result.json"), JSON.stringify({ ...result, matches: false, recorded: null }));
    const page = join(dir, "differs.html");
    const r = await runCli(["runs", "show", copy, "--html", page]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const p = await browser.openPage(page);
    assert.deepEqual(p.problems, []);
    assert.deepEqual(p.requests, [`file://${page}`]);
    assert.equal(await p.evaluate<string>("document.querySelector('.replay').dataset.verdict"), "differs");
    assert.equal(await p.evaluate<string>("document.querySelector('.replay-difference').dataset.pointer"), `/events/${at}/code`);
    assert.match(await p.evaluate<string>("document.querySelector('.replay-difference').textContent"), /recorded 0, replayed 7/);
    assert.deepEqual(await p.evaluate<string[]>("[...document.querySelectorAll('circle.differs')].map((c) => c.dataset.index)"), [String(at)]);
    assert.equal(await p.evaluate<string>("document.querySelector('tr.differs').id"), `event-${at}`);
  });

  it("--trace writes the trace-event format of the same timeline", async () => {
    const out = join(dir, "trace.json");
    const r = await runCli(["runs", "show", runDir, "--trace", out]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const t = JSON.parse(readFileSync(out, "utf8")) as {
      traceEvents: Array<Record<string, unknown>>;
      displayTimeUnit: string;
      otherData: Record<string, unknown>;
    };
    assert.equal(t.displayTimeUnit, "ms");
    assert.ok(Array.isArray(t.traceEvents));
    for (const e of t.traceEvents) {
      assert.ok(["X", "i", "M"].includes(e.ph as string), `phase ${e.ph}`);
      assert.equal(typeof e.name, "string");
      assert.ok(Number.isSafeInteger(e.pid) && Number.isSafeInteger(e.tid));
      if (e.ph !== "M") assert.ok(Number.isSafeInteger(e.ts) && (e.ts as number) >= 0, "ts in whole microseconds");
      if (e.ph === "X") assert.ok(Number.isSafeInteger(e.dur) && (e.dur as number) > 0, "a complete event has a duration");
    }
    const instants = t.traceEvents.filter((e) => e.ph === "i");
    assert.deepEqual(
      instants.map((e) => (e.args as { event: unknown }).event),
      events,
      "every event of events.json, in order",
    );
    const lanes = new Set(events.map((e) => e.invocation));
    const named = t.traceEvents.filter((e) => e.ph === "M" && e.name === "thread_name").map((e) => e.tid);
    assert.deepEqual(new Set(named), lanes, "one named thread per lane");
    assert.equal(t.traceEvents.filter((e) => e.ph === "X").length, [...lanes].filter((i) => i !== 0).length, "one complete event per invocation");
    assert.equal(typeof t.otherData.guest_instructions, "number");
    assert.match(String(t.otherData.time_axis), /event order/);
  });

  it("a run whose events.json is not a list of events is refused (RUN_INVALID), and neither file is written", async () => {
    const copy = join(dir, "bad-events");
    cpSync(runDir, copy, { recursive: true });
    writeFileSync(join(copy, "events.json"), JSON.stringify([...events, { no: "event" }]));
    const page = join(dir, "bad.html");
    const trace = join(dir, "bad.json");
    const r = await runCli(["runs", "show", copy, "--html", page, "--trace", trace, "--json"]);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const e = JSON.parse(r.stdout).error;
    assert.equal(e.code, "RUN_INVALID");
    assert.match(e.path, new RegExp(`events.json#/${events.length}$`));
    assert.equal(existsSync(page) || existsSync(trace), false);
    // control: the unaltered run gives both
    assert.equal((await runCli(["runs", "show", runDir, "--html", page, "--trace", trace])).code, 0);
    assert.ok(existsSync(page) && existsSync(trace));
  });

  it("a run with more events than picture.events is refused naming the limit, before a file is written", async () => {
    const copy = join(dir, "many-events");
    cpSync(runDir, copy, { recursive: true });
    const many = Array.from({ length: 20_001 }, () => ({ invocation: 1, event: "start" }));
    writeFileSync(join(copy, "events.json"), JSON.stringify(many));
    const page = join(dir, "many.html");
    const r = await runCli(["runs", "show", copy, "--html", page, "--json"]);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const e = JSON.parse(r.stdout).error;
    assert.equal(e.code, "LIMIT_EXCEEDED");
    assert.match(e.message, /picture\.events/);
    assert.equal(existsSync(page), false);
    // control: exactly at the limit is drawn
    writeFileSync(join(copy, "events.json"), JSON.stringify(many.slice(1)));
    assert.equal((await runCli(["runs", "show", copy, "--html", page])).code, 0);
    assert.ok(existsSync(page));
  });

  it("hostile strings in a run directory stay text: no markup, no script, no request (the run is shown tampered)", async () => {
    const copy = join(dir, "hostile");
    cpSync(runDir, copy, { recursive: true });
    const hostile = `"'><img src="http://127.0.0.1:9/e.png"><script>document.title="pwned"</script>`;
    writeFileSync(join(copy, "events.json"), JSON.stringify([{ invocation: 1, event: hostile, reason: hostile }, ...events]));
    const page = join(dir, "hostile.html");
    const r = await runCli(["runs", "show", copy, "--html", page]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const p = await browser.openPage(page);
    assert.deepEqual(p.problems, []);
    assert.deepEqual(p.requests, [`file://${page}`]);
    assert.equal(await p.evaluate<number>("document.querySelectorAll('img, script').length"), 0);
    assert.equal(await p.evaluate<string>("document.querySelector('circle.event').dataset.event"), hostile, "the name is kept as text");
    assert.match(await p.evaluate<string>("document.querySelector('.banner').textContent"), /tampered/);
  });

  it("a streams/ that is a symlink is not read into the page (control: the run's own streams are)", async () => {
    const copy = join(dir, "linked-streams");
    cpSync(runDir, copy, { recursive: true });
    const elsewhere = join(dir, "elsewhere");
    mkdirSync(elsewhere);
    writeFileSync(join(elsewhere, "1.stdout"), "a file of another directory");
    rmSync(join(copy, "streams"), { recursive: true });
    symlinkSync(elsewhere, join(copy, "streams"));
    const page = join(dir, "linked.html");
    assert.equal((await runCli(["runs", "show", copy, "--html", page, "--private"])).code, 0);
    const html = readFileSync(page, "utf8");
    assert.doesNotMatch(html, /another directory/);
    assert.match(html, /no stream file in the run directory/);
  });

  it("checkpoints a record took are drawn at their guest instruction counts and listed in the trace", async () => {
    const copy = join(dir, "with-checkpoints");
    cpSync(runDir, copy, { recursive: true });
    const m = JSON.parse(readFileSync(join(copy, "run.json"), "utf8"));
    const taken = [
      { name: "early", after: { step: 1 }, icount: 1000 },
      { name: "late", after: { output: "stdout", contains: "hello" }, icount: 2000 },
    ];
    m.checkpoints = { file: { sha256: `sha256:${"a".repeat(64)}`, size: 1 }, taken };
    writeFileSync(join(copy, "run.json"), JSON.stringify(m));
    const page = join(dir, "checkpoints.html");
    const trace = join(dir, "checkpoints.json");
    const r = await runCli(["runs", "show", copy, "--html", page, "--trace", trace]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const p = await browser.openPage(page);
    assert.deepEqual(p.problems, []);
    assert.deepEqual(await p.evaluate<string[]>("[...document.querySelectorAll('svg rect.checkpoint')].map((c) => c.dataset.name + ' ' + c.dataset.icount)"), [
      "early 1000",
      "late 2000",
    ]);
    assert.deepEqual(JSON.parse(readFileSync(trace, "utf8")).otherData.checkpoints, [
      { name: "early", after: "step 1", icount: 1000 },
      { name: "late", after: 'stdout contains "hello"', icount: 2000 },
    ]);
    // control: the run without checkpoints draws none
    const plain = await browser.openPage(join(dir, "run.html"));
    assert.equal(await plain.evaluate<number>("document.querySelectorAll('svg rect.checkpoint').length"), 0);
  });

  it("a replay directory (RUN/replays/N) is drawn as that replay: its own events, its verdict and first difference", async () => {
    // the altered copy of the third case: replays/1 differs from the record at one exit code
    const copy = join(dir, "altered");
    const replayed = JSON.parse(readFileSync(join(copy, "replays", "1", "events.json"), "utf8")) as Array<Record<string, unknown>>;
    const at = replayed.findIndex((e) => e.event === "exit");
    const page = join(dir, "replay.html");
    const trace = join(dir, "replay.json");
    const r = await runCli(["runs", "show", join(copy, "replays", "1"), "--html", page, "--trace", trace]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /^run +\S+/m, "the text output describes the replay's run");
    const p = await browser.openPage(page);
    assert.deepEqual(p.problems, []);
    assert.match(await p.evaluate<string>("document.querySelector('h1').textContent"), /^cairn replay 1 of run /);
    assert.equal(await p.evaluate<number>("document.querySelectorAll('svg circle.event').length"), replayed.length);
    assert.match(await p.evaluate<string>("document.querySelector('tr.differs').textContent"), /exit 7/, "the replay's own event, as it replayed");
    assert.equal(await p.evaluate<string>("document.querySelector('.replay-difference').dataset.pointer"), `/events/${at}/code`);
    assert.match(await p.evaluate<string>("document.body.innerText"), /host cost\s+not recorded for a replay/);
    assert.equal(JSON.parse(readFileSync(trace, "utf8")).otherData.replay, 1);
    const none = await runCli(["runs", "show", join(runDir, "replays", "9"), "--json"]);
    assert.equal(none.code, 1, "a replay the run does not have");
    assert.equal(JSON.parse(none.stdout).error.code, "RUN_INVALID");
    // control: the faithful replay of the unaltered run marks nothing
    const good = join(dir, "replay-good.html");
    assert.equal((await runCli(["runs", "show", join(runDir, "replays", "1"), "--html", good])).code, 0);
    const g = await browser.openPage(good);
    assert.equal(await g.evaluate<string>("document.querySelector('.replay').dataset.verdict"), "matched");
    assert.equal(await g.evaluate<number>("document.querySelectorAll('.differs').length"), 0);
  });

  it("an output inside the run directory is a usage error and the run's files are untouched (control: outside it is written)", async () => {
    const before = readFileSync(join(runDir, "events.json"));
    for (const args of [
      ["--html", join(runDir, "events.json")],
      ["--trace", join(runDir, "replays", "1", "events.json")],
      ["--html", join(runDir, "page.html")],
    ]) {
      const r = await runCli(["runs", "show", runDir, ...args, "--json"]);
      assert.equal(r.code, 2, `${args.join(" ")}: ${r.stdout}${r.stderr}`);
      assert.equal(JSON.parse(r.stdout).error.path, args[0]);
    }
    assert.deepEqual(readFileSync(join(runDir, "events.json")), before);
    assert.equal(existsSync(join(runDir, "page.html")), false);
    const same = await runCli(["runs", "show", runDir, "--html", join(dir, "same"), "--trace", join(dir, "same"), "--json"]);
    assert.equal(same.code, 2, "--html and --trace naming one file");
    assert.equal((await runCli(["runs", "show", runDir, "--html", join(dir, "outside.html")])).code, 0);
  });

  it("a run's network facts and fault events are shown (control: the example run has neither)", async () => {
    const copy = join(dir, "network-faults");
    cpSync(runDir, copy, { recursive: true });
    writeFileSync(join(copy, "network.json"), JSON.stringify({ responders: [{ port: 8080, kind: "http", connections: 4, refused: 2 }] }));
    const fault = { invocation: 0, event: "infra-failure", reason: "output-limit", detail: 1 };
    writeFileSync(join(copy, "events.json"), JSON.stringify([...events.slice(0, -1), fault, events.at(-1)]));
    const page = join(dir, "network.html");
    assert.equal((await runCli(["runs", "show", copy, "--html", page])).code, 0);
    const p = await browser.openPage(page);
    assert.deepEqual(p.problems, []);
    const text = await p.evaluate<string>("document.body.innerText");
    assert.match(text, /8080\s+http\s+4\s+2/);
    assert.deepEqual(await p.evaluate<string[]>("[...document.querySelectorAll('.faults li')].map((l) => l.textContent)"), [
      `event ${events.length - 1}: infrastructure failure output-limit (1)`,
    ]);
    assert.equal(await p.evaluate<number>("document.querySelectorAll('svg circle.event.fault').length"), 1);
    const plain = await browser.openPage(join(dir, "run.html"));
    assert.match(await plain.evaluate<string>("document.body.innerText"), /no network facts recorded[\s\S]*no fault events/);
  });
});
