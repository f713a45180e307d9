/**
 * `layer capture` holds at most one rewritten file in memory (second pass,
 * issue 32 item 6): a tree of FILES text files of FILE_MIB each, every line
 * naming the install root, is captured with normalization in a child process
 * that reports its peak RSS (tests/helpers/peak-memory.ts); the peak stays
 * below the baseline (a child that loads the same modules and does nothing)
 * plus BUDGET_OVER_BASE_MIB, well under the tree's size. Control: a child
 * that holds the files' bytes at once, as a capture keeping every rewritten
 * file would, is above that budget, so the measurement catches it.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { closeSync, mkdirSync, openSync, realpathSync, writeSync } from "node:fs";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import { peakInChild } from "../helpers/peak-memory.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { tempDir } from "../strata/fixtures.ts";

const MiB = 1024 * 1024;
const FILES = 10;
const FILE_MIB = 24;
/** What a capture may use above the baseline: one file read and rewritten, chunks, zlib's window, the tree. */
const BUDGET_OVER_BASE_MIB = 150;

const work = realpathSync(tempDir("cairn-capture-mem-"));
const env = join(work, "env");
const src = join(PROJECT_ROOT, "src");

function measure(name: string, body: string): { outcome: string; rssMiB: number } {
  return peakInChild(
    work,
    name,
    `const src = ${JSON.stringify(src)};
const work = ${JSON.stringify(work)};
const env = ${JSON.stringify(env)};
const strata = await import(src + "/strata/index.ts");
const spec = { name: "big", version: "1.0", arch: "noarch", abi: "none", install_layout: "prefix", user_selectable: true, provides: [], requires: [], builder: "cairn test" };`,
    body,
  );
}

/** FILES text files of FILE_MIB, each line random base64 after the install root (written a MiB at a time). */
function bigTextTree(): void {
  mkdirSync(join(env, "share"), { recursive: true });
  for (let f = 0; f < FILES; f++) {
    const fd = openSync(join(env, "share", `t${f}.txt`), "w", 0o644);
    for (let i = 0; i < FILE_MIB; i++) {
      const lines: string[] = [];
      let n = 0;
      while (n < MiB) {
        const line = `${env}/lib ${randomBytes(60).toString("base64")}\n`;
        lines.push(line);
        n += line.length;
      }
      writeSync(fd, lines.join("").slice(0, MiB));
    }
    closeSync(fd);
  }
}

describe(`layer capture of ${FILES} text files of ${FILE_MIB} MiB naming the install root stays within baseline + ${BUDGET_OVER_BASE_MIB} MiB`, () => {
  let baseline = 0;
  before(() => {
    bigTextTree();
    baseline = measure("baseline", "void strata;").rssMiB;
  });

  it("captures with every file rewritten, one at a time", (t) => {
    const m = measure(
      "capture",
      `const r = await strata.captureLayer(env, spec, { source: "filesystem" }, work + "/out-" + process.pid + ".tar.gz");
if (r.report.rewritten.length !== ${FILES}) throw new Error("rewritten " + r.report.rewritten.length);`,
    );
    assert.equal(m.outcome, "accepted");
    t.diagnostic(`peak ${m.rssMiB} MiB, baseline ${baseline} MiB`);
    assert.ok(m.rssMiB < baseline + BUDGET_OVER_BASE_MIB, `peak ${m.rssMiB} MiB, baseline ${baseline} MiB`);
  });

  it("control: holding every file's bytes at once is above the budget", (t) => {
    const m = measure(
      "control",
      `const { readFileSync, readdirSync } = await import("node:fs");
const held = readdirSync(env + "/share").map((n) => readFileSync(env + "/share/" + n));
if (held.length !== ${FILES}) throw new Error("files");`,
    );
    assert.equal(m.outcome, "accepted");
    t.diagnostic(`peak ${m.rssMiB} MiB, baseline ${baseline} MiB`);
    assert.ok(m.rssMiB > baseline + BUDGET_OVER_BASE_MIB, `peak ${m.rssMiB} MiB, baseline ${baseline} MiB`);
  });
});
