// Progress as data (issue 36, item 3): the library reports events, the CLI
// draws a bar on a terminal only (stderr), nothing in a pipe, nothing with
// --quiet; stdout stays the command's result. The terminal is a real
// pseudo-terminal made by util-linux `script`.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ProgressEvent } from "../../src/core/index.ts";
import type { Io } from "../../src/cli/output.ts";
import { lineWidth, progressDisplay, progressInterval, progressLine } from "../../src/cli/progress-bar.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { needs } from "../helpers/prerequisites.ts";
import { GCC_SKIP } from "../workload/fixtures/static-program.ts";
import { helloImage, ociWorkspace } from "../workload/fixtures/workspace.ts";
import { file } from "../workload/fixtures/tar-writer.ts";

const CLEAR = "\r\x1b[2K";

function fakeIo(tty: boolean): Io & { drawn: string[]; lines: string[] } {
  const drawn: string[] = [];
  const lines: string[] = [];
  return { out: (t) => void lines.push(`out:${t}`), err: (t) => void lines.push(`err:${t}`), tty, draw: (t) => void drawn.push(t), drawn, lines };
}

const ev = (done: number, phase = "pull"): ProgressEvent => ({ phase, done, total: 1000, unit: "bytes" });

test("on a terminal each event past the interval redraws one line in place; a new phase draws at once; finish erases it", () => {
  const io = fakeIo(true);
  let clock = 0;
  const d = progressDisplay(io, { quiet: false, env: {}, now: () => clock });
  d.progress(ev(0));
  clock = 50;
  d.progress(ev(100)); // within 100 ms of the last draw: skipped
  d.progress(ev(200, "apply layers")); // a new phase: drawn
  clock = 160;
  d.progress(ev(300, "apply layers"));
  assert.deepEqual(
    io.drawn.map((t) => t.startsWith(CLEAR)),
    [true, true, true],
  );
  assert.deepEqual(
    io.drawn.map((t) => t.slice(CLEAR.length).split(" ")[0]),
    ["pull", "apply", "apply"],
  );
  assert.match(io.drawn[2]!, /\[#{7}-{17}\] 30% 300 B\/1000 B$/);
  d.io.err("a message"); // a line written while the bar is up clears it first
  assert.equal(io.drawn.at(-1), CLEAR);
  assert.deepEqual(io.lines, ["err:a message"]);
  d.io.out("another"); // nothing drawn since: nothing to erase
  assert.equal(io.drawn.length, 4);
  clock = 400;
  d.progress(ev(400, "apply layers"));
  d.finish();
  assert.equal(io.drawn.at(-1), CLEAR, "finish erases the bar");
  const count = io.drawn.length;
  clock = 1000;
  d.progress(ev(500, "late"));
  assert.equal(io.drawn.length, count, "an event after the end draws nothing");
});

test("off a terminal, or with --quiet, the sink draws nothing and the io is the caller's own; control: a terminal draws", () => {
  for (const [tty, quiet, draws] of [
    [false, false, 0],
    [true, true, 0],
    [true, false, 2],
  ] as const) {
    const io = fakeIo(tty);
    const d = progressDisplay(io, { quiet, env: { CAIRN_PROGRESS_INTERVAL_MS: "0" } });
    d.progress(ev(1));
    d.progress(ev(2));
    d.finish();
    assert.equal(io.drawn.filter((t) => t !== CLEAR).length, draws, `tty ${tty} quiet ${quiet}`);
    if (draws === 0) assert.equal(d.io, io);
  }
});

test("the interval is CAIRN_PROGRESS_INTERVAL_MS when it is a non-negative integer, else 100 ms; a line fits 78 columns and has no control character", () => {
  assert.equal(progressInterval({}), 100);
  assert.equal(progressInterval({ CAIRN_PROGRESS_INTERVAL_MS: "0" }), 0);
  assert.equal(progressInterval({ CAIRN_PROGRESS_INTERVAL_MS: "-5" }), 100);
  assert.equal(progressInterval({ CAIRN_PROGRESS_INTERVAL_MS: "1e3" }), 100);
  const long = progressLine({ phase: `x\x1b[31m${"y".repeat(200)}`, done: 5 * 1024 * 1024, total: 10 * 1024 * 1024, unit: "bytes" });
  assert.ok(long.length <= 78, long);
  assert.doesNotMatch(long, /\p{Cc}/u);
  assert.match(long, /50% 5\.0 MiB\/10\.0 MiB$/);
  assert.equal(progressLine({ phase: "gc", done: 3, unit: "files" }), "gc 3 files");
});

const ptySkip = GCC_SKIP || needs(spawnSync("script", ["--version"]).status === 0 ? undefined : "util-linux script");

/** Runs the CLI from the sources, as `bin/cairn.js` runs the compiled one, with stdout to a file; on a pty when `pty`. */
function runCairn(work: string, args: readonly string[], pty: boolean): { code: number | null; stderr: string; stdout: string } {
  const entry = join(work, "cli.mjs");
  writeFileSync(
    entry,
    `const m = await import(${JSON.stringify(join(PROJECT_ROOT, "src/cli/main.ts"))}); process.exitCode = await m.main(process.argv.slice(2));\n`,
  );
  const q = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
  const outFile = join(work, `stdout-${Math.random().toString(36).slice(2)}`);
  const cmd = [process.execPath, "--import", "tsx", entry, ...args].map(q).join(" ");
  const env = { ...process.env, CAIRN_PROGRESS_INTERVAL_MS: "0", CAIRN_HOME: join(work, "home") };
  const r = pty
    ? spawnSync("script", ["-qfec", `${cmd} > ${q(outFile)}`, "/dev/null"], { cwd: PROJECT_ROOT, env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })
    : spawnSync("sh", ["-c", `${cmd} > ${q(outFile)}`], { cwd: PROJECT_ROOT, env, encoding: "utf8" });
  // on a pty, stderr is the terminal: `script` copies it to its stdout
  return { code: r.status, stderr: pty ? r.stdout + r.stderr : r.stderr, stdout: readFileSync(outFile, "utf8") };
}

test("workload assemble of a generated 3 MiB layer: a moving bar on a terminal, nothing in a pipe, nothing with --quiet; stdout one JSON document each time", {
  skip: ptySkip,
}, () => {
  const base = helloImage();
  const big = randomBytes(3 * 1024 * 1024); // incompressible: the layer is read in many chunks
  const ws = ociWorkspace({ ...base, layers: [{ entries: [...(base.layers[0]!.entries ?? []), file("data/blob", big, { mode: 0o644, mtime: 1700000000 })] }] });
  const assemble = (n: number, extra: string[]) => [
    "workload",
    "assemble",
    ws.specPath,
    "--store",
    join(ws.dir, `store${n}`),
    "--lock-out",
    join(ws.dir, `lock${n}.json`),
    "--no-memo",
    "--json",
    ...extra,
  ];

  const onTty = runCairn(ws.dir, assemble(1, []), true);
  assert.equal(onTty.code, 0, onTty.stderr);
  const frames = onTty.stderr.split(CLEAR).filter((f) => f.startsWith("apply layers"));
  assert.ok(new Set(frames).size >= 2, `at least two distinct redraws: ${JSON.stringify(frames.slice(0, 5))}`);
  assert.match(frames.at(-1)!, /100% 3\.\d MiB\/3\.\d MiB$/, "the last frame is the whole");
  assert.ok(onTty.stderr.trimEnd().endsWith("\x1b[2K"), "the bar is erased at the end");
  const doc = JSON.parse(onTty.stdout) as { workload?: string };
  assert.match(doc.workload ?? "", /^sha256:/, "stdout is one JSON document, no bar in it");

  const piped = runCairn(ws.dir, assemble(2, []), false);
  assert.equal(piped.code, 0, piped.stderr);
  assert.doesNotMatch(piped.stderr, /[\r\x1b]/, "no bar characters off a terminal");
  assert.equal((JSON.parse(piped.stdout) as { workload?: string }).workload, doc.workload);

  const quiet = runCairn(ws.dir, assemble(3, ["--quiet"]), true);
  assert.equal(quiet.code, 0, quiet.stderr);
  assert.doesNotMatch(quiet.stderr, /\x1b\[2K|apply layers/, "--quiet draws nothing on a terminal");
  assert.equal((JSON.parse(quiet.stdout) as { workload?: string }).workload, doc.workload);

  const rootQuiet = runCairn(ws.dir, ["--quiet", ...assemble(4, [])], true);
  assert.equal(rootQuiet.code, 0, rootQuiet.stderr);
  assert.doesNotMatch(rootQuiet.stderr, /\x1b\[2K/, "--quiet before the command too");
});

test("a narrow terminal gets a line one column narrower than it: the bar goes first, then the phase is cut; control: 80 columns keep the whole line", () => {
  const e: ProgressEvent = { phase: "apply layers", done: 512, total: 2048, unit: "bytes" };
  assert.equal(lineWidth(undefined), 78);
  assert.equal(lineWidth(200), 78);
  assert.equal(lineWidth(40), 39);
  assert.equal(progressLine(e, lineWidth(80)), "apply layers [######------------------] 25% 512 B/2.0 KiB");
  const narrow = progressLine(e, lineWidth(40));
  assert.equal(narrow, "apply layers 512 B/2.0 KiB");
  for (const columns of [2, 5, 12, 20, 30, 50]) assert.ok(progressLine(e, lineWidth(columns)).length < columns, `${columns} columns`);
  const io = { ...fakeIo(true), columns: 30 };
  const d = progressDisplay(io, { quiet: false, env: {} });
  d.progress(e);
  assert.ok(io.drawn[0]!.length - CLEAR.length < 30, io.drawn[0]);
});
