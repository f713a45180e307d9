/**
 * Skips are loud (issue 17, item 2): a fixture that does not build fails with
 * the compiler's message, never "not installed"; with CI=true a missing
 * prerequisite fails instead of skipping; the runner's closing line counts
 * skips and fails on any skip but the optional official vectors.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { inCi, needs, needsRoot, PREREQUISITE_SKIP_PREFIX } from "../helpers/prerequisites.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { buildProgramFrom, EXAMPLE_SOURCE, GCC_SKIP, staticGccMissing } from "../workload/fixtures/static-program.ts";

const GENERATED = join(PROJECT_ROOT, "tests", ".generated", "skips");

/** Runs the generated test files under node --test with both reporters, then scripts/test-summary.sh. */
function runSuite(files: Record<string, string>, env: NodeJS.ProcessEnv = {}, nodeArgs: string[] = []) {
  const dir = join(GENERATED, `${process.pid}-${Math.random().toString(16).slice(2)}`);
  mkdirSync(dir, { recursive: true });
  try {
    const paths = Object.entries(files).map(([name, text]) => {
      const p = join(dir, name);
      writeFileSync(p, text);
      return p;
    });
    const log = join(dir, "spec.log");
    const tap = join(dir, "run.tap");
    // a fresh runner: without NODE_TEST_CONTEXT the child is not a subtest of this one
    const { NODE_TEST_CONTEXT: _, ...parentEnv } = process.env;
    const childEnv = { ...parentEnv, CI: "", ...env };
    const node = spawnSync(
      process.execPath,
      [
        "--import",
        "tsx",
        "--test",
        ...nodeArgs,
        "--test-reporter=spec",
        `--test-reporter-destination=${log}`,
        "--test-reporter=tap",
        `--test-reporter-destination=${tap}`,
        ...paths,
      ],
      { cwd: PROJECT_ROOT, env: childEnv, timeout: 60_000, stdio: "ignore", killSignal: "SIGKILL" },
    );
    // node's runner exits 1 on SIGTERM, so a run stopped by this timeout is told apart by its signal
    assert.equal(node.signal, null, "node --test finished within its timeout");
    const summary = spawnSync("bash", [join(PROJECT_ROOT, "scripts", "test-summary.sh"), log, tap, String(node.status)], { encoding: "utf8", timeout: 20_000 });
    return { nodeStatus: node.status, status: summary.status, stdout: summary.stdout, stderr: summary.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const helper = JSON.stringify(join(PROJECT_ROOT, "tests", "helpers", "prerequisites.ts"));
const passing = `import { test } from "node:test";\ntest("runs", () => {});\n`;
const vectorsSkip = `import { test } from "node:test";\ntest("vectors", { skip: "official vectors not found at /nowhere — skipped" }, () => {});\n`;
const mirrorSkip = `import { test } from "node:test";\ntest("peer", { skip: "Strata mirror not found at /nowhere (no clone) — skipped" }, () => {});\n`;
const prerequisiteSkip = `import { describe, it } from "node:test";\nimport { needs } from ${helper};\ndescribe("needs a tool", { skip: needs("frobnicate is not installed") }, () => { it("x", () => {}); });\n`;

describe("skips are loud", () => {
  it("a fixture program that does not compile fails with the compiler's message, not as a missing tool (control: the example builds)", () => {
    assert.equal(GCC_SKIP, false, "gcc and a static libc are present here");
    assert.equal(staticGccMissing(), undefined);
    buildProgramFrom(EXAMPLE_SOURCE, "static"); // control
    const dir = mkdtempSync(join(tmpdir(), "cairn-broken-"));
    try {
      const broken = join(dir, "broken.c");
      copyFileSync(EXAMPLE_SOURCE, broken);
      writeFileSync(broken, `${readFileSync(broken, "utf8")}\nthis is not C;\n`);
      assert.throws(
        () => buildProgramFrom(broken, "static"),
        (e: Error) => /error:/.test(e.message) && /broken\.c/.test(e.message) && !/not installed/.test(e.message),
      );
      assert.equal(staticGccMissing(), undefined, "a broken fixture does not make the toolchain look missing");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a missing prerequisite skips with its reason outside CI and fails with CI=true (control: present is no skip)", () => {
    assert.equal(needs(undefined, { CI: "true" }), false);
    assert.equal(needs(undefined, {}), false);
    assert.equal(needs("umoci is not installed", {}), `${PREREQUISITE_SKIP_PREFIX} umoci is not installed`);
    assert.throws(() => needs("umoci is not installed", { CI: "true" }), /prerequisite missing: umoci/);
    assert.equal(inCi({ CI: "true" }), true);
    assert.equal(inCi({}), false);
  });

  it("a test that needs root is a loud skip naming what needs it when not root, a failure in CI (control: root is no skip)", () => {
    assert.equal(needsRoot("mknod of a character device", 0, {}), false, "control: root");
    assert.equal(needsRoot("mknod of a character device", 65534, {}), `${PREREQUISITE_SKIP_PREFIX} root (mknod of a character device); this run is not root`);
    assert.throws(() => needsRoot("mknod", 1000, { CI: "true" }), /prerequisite missing: root \(mknod\)/);
    // No test drops a root-only case silently any more: every getuid() check in these files is a needsRoot skip.
    for (const f of ["tests/strata/blob.test.ts", "tests/manifest/local-features.test.ts", "tests/vm/erofs.test.ts"]) {
      const text = readFileSync(join(PROJECT_ROOT, f), "utf8");
      assert.doesNotMatch(text, /getuid/, `${f} decides on root itself`);
      assert.match(text, /skip: needsRoot\(/, `${f} has its root-only test`);
    }
  });

  it("in a real run, CI=true turns the prerequisite skip into a failing file (control: without CI it is a skip)", () => {
    const local = runSuite({ "a.test.ts": prerequisiteSkip, "b.test.ts": passing });
    assert.equal(local.nodeStatus, 0, "outside CI the file skips");
    const ci = runSuite({ "a.test.ts": prerequisiteSkip, "b.test.ts": passing }, { CI: "true" });
    assert.notEqual(ci.nodeStatus, 0, "with CI=true the file fails");
    assert.notEqual(ci.status, 0);
  });

  it("the closing line counts skips, and any skip but the official vectors or the Strata mirror fails the run (control: such skips alone pass)", () => {
    const ok = runSuite({ "a.test.ts": passing, "b.test.ts": vectorsSkip, "m.test.ts": mirrorSkip });
    assert.equal(ok.status, 0, ok.stderr);
    assert.match(ok.stdout, /^1 passed, 0 failed, 0 cancelled, 2 skipped$/m);
    const bad = runSuite({ "a.test.ts": passing, "b.test.ts": vectorsSkip, "c.test.ts": prerequisiteSkip });
    assert.equal(bad.nodeStatus, 0, "node itself passes a run with skips");
    assert.equal(bad.status, 1, "the summary fails it");
    assert.match(bad.stdout, /^1 passed, 0 failed, 0 cancelled, 2 skipped$/m);
    assert.match(bad.stderr, /needs a tool # SKIP prerequisite missing: frobnicate/);
  });

  it("the runner bounds every test file: scripts/run-tests.sh passes --test-timeout, and under it a hanging test fails (control: a passing file)", () => {
    assert.match(readFileSync(join(PROJECT_ROOT, "scripts", "run-tests.sh"), "utf8"), /--test-timeout="\$timeout_ms"/);
    const hang = `import { test } from "node:test";\ntest("hangs", async () => { await new Promise(() => { setInterval(() => {}, 1000); }); });\n`;
    const r = runSuite({ "a.test.ts": passing, "b.test.ts": hang }, {}, ["--test-timeout=10000"]);
    assert.notEqual(r.nodeStatus, 0, "the hanging file fails instead of stalling the run");
    assert.notEqual(r.status, 0);
    assert.match(r.stdout, /^1 passed, 0 failed, 1 cancelled, 0 skipped$/m);
  });
});
