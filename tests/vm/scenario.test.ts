import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CairnError, parseYamlText } from "../../src/core/index.ts";
import {
  checkAssertions,
  chooseRoot,
  DEFAULT_RUN_LIMITS,
  DEFAULT_SCENARIO,
  defaultMemoryMib,
  DISK_ROOT_FROM_BYTES,
  IMAGE_BYTES,
  imageBytesMax,
  parseScenario,
  splitLines,
} from "../../src/vm/index.ts";
import { oneRun } from "./fixtures/records.ts";
import { decodeProtocol } from "../../src/vm/index.ts";

const good = `
steps:
  - action: start
  - action: write-stdin
    data: "ping\\n"
    after: {output: stdout, contains: ready}
  - action: write-stdin
    data: "more\\n"
    offset: 5
  - action: close-stdin
    after: {event: input-accepted}
  - action: start
  - action: terminate
    after: {event: start}
expect:
  - exit-code: 0
    stdout-lines: [pong]
  - invocation: 2
    signal: 9
limits: {output-bytes: 4096, time-ms: 1000}
`;

describe("run section", () => {
  it("parses steps, triggers, computed offsets, expectations and limits", () => {
    const s = parseScenario(parseYamlText(good));
    assert.deepEqual(
      s.steps.map((x) => x.action),
      ["start", "write-stdin", "write-stdin", "close-stdin", "start", "terminate"],
    );
    assert.deepEqual(s.steps[1]!.after, { kind: "output", stream: "stdout", contains: "ready" });
    const w = s.steps[2]!;
    assert.ok(w.action === "write-stdin" && w.offset === 5);
    assert.deepEqual(s.steps[4]!.after, { kind: "event", event: "cleanup-complete" }, "a restart waits for cleanup by default");
    assert.deepEqual(s.expect, [
      { invocation: 1, exitCode: 0, stdoutLines: ["pong"] },
      { invocation: 2, signal: 9 },
    ]);
    assert.deepEqual(s.limits, { ...DEFAULT_RUN_LIMITS, outputBytes: 4096, timeMs: 1000 });
    assert.equal(parseScenario(undefined), DEFAULT_SCENARIO);
  });

  it("refuses malformed sections with the offending path (control: the good one parses)", () => {
    parseScenario(parseYamlText(good));
    const bad: Array<[string, string]> = [
      ["steps: [{action: start, colour: red}]", "/run/steps/0/colour"],
      ["steps: [{action: write-stdin, data: x}]", "/run/steps/0/action"],
      ["steps: [{action: start}, {action: write-stdin, data: x, offset: 3}]", "/run/steps/1/offset"],
      ["steps: [{action: start}, {action: close-stdin, after: {event: exploded}}]", "/run/steps/1/after/event"],
      ["steps: [{action: start}, {action: close-stdin, after: {output: stdin, contains: x}}]", "/run/steps/1/after/output"],
      ["steps: [{action: start, data: x}]", "/run/steps/0"],
      ["steps: [{action: start}]\nexpect: [{invocation: 2, exit-code: 0}]", "/run/expect/0/invocation"],
      ["steps: [{action: start}]\nlimits: {frame-bytes: 8192}", "/run/limits/frame-bytes"],
      ["steps: [{action: start}]\nexpect: [{stdout-sha256: nope}]", "/run/expect/0/stdout-sha256"],
      ["steps: []", "/run/steps"],
      ["steps: [{action: start}]\nverify-tree: bytes", "/run/verify-tree"],
      ["steps: [{action: start}]\nverify-tree: 1", "/run/verify-tree"],
      ["steps: [{action: start}]\nmemory-mib: 64", "/run/memory-mib"],
      ["steps: [{action: start}]\nmemory-mib: 16385", "/run/memory-mib"],
      ["steps: [{action: start}]\nroot: initramfs\nlimits: {image-bytes: 1073741825}", "/run/limits/image-bytes"],
      ["steps: [{action: start}]\nlimits: {image-bytes: 17592186040321}", "/run/limits/image-bytes"],
      ["steps: [{action: start}]\nroot: ext4", "/run/root"],
      ["steps: [{action: start}]\nroot: 1", "/run/root"],
      ["steps: [{action: start}]\nproc: yes-please", "/run/proc"],
      ["steps: [{action: start}]\nurandom: 1", "/run/urandom"],
    ];
    for (const [yaml, path] of bad) {
      assert.throws(
        () => parseScenario(parseYamlText(yaml)),
        (e: unknown) => e instanceof CairnError && e.exitCode === 1 && e.issues.some((i) => i.path === path),
        `${yaml}: expected a refusal with an issue at ${path}`,
      );
    }
  });

  it("reads run.root; without it the root is chosen by the tree's file bytes (a disk above 64 MiB)", () => {
    assert.equal(parseScenario(parseYamlText("steps: [{action: start}]\nroot: disk")).root, "disk");
    const inRam = parseScenario(parseYamlText("steps: [{action: start}]\nroot: initramfs"));
    assert.equal(inRam.root, "initramfs");
    const plain = parseScenario(parseYamlText("steps: [{action: start}]"));
    assert.equal(plain.root, undefined);
    assert.equal(chooseRoot(plain, DISK_ROOT_FROM_BYTES), "initramfs");
    assert.equal(chooseRoot(plain, DISK_ROOT_FROM_BYTES + 1), "disk");
    assert.equal(chooseRoot(inRam, DISK_ROOT_FROM_BYTES + 1), "initramfs", "the spec's choice wins");
    assert.equal(chooseRoot({ ...plain, root: "disk" }, 0), "disk");
    const opt = parseScenario(parseYamlText("steps: [{action: start}]\nproc: true\nurandom: true"));
    assert.deepEqual([opt.proc, opt.urandom], [true, true]);
    assert.deepEqual([plain.proc, plain.urandom], [undefined, undefined]);
    const off = parseScenario(parseYamlText("steps: [{action: start}]\nproc: false"));
    assert.equal(off.proc, undefined, "false is the default: the same scenario");
  });

  it("reads run.memory-mib and run.limits.image-bytes; without them RAM is sized from the image and the image limit is the root's default", () => {
    const sc = parseScenario(parseYamlText("steps: [{action: start}]\nmemory-mib: 640\nlimits: {image-bytes: 209715200}"));
    assert.equal(sc.memoryMib, 640);
    assert.equal(sc.limits.imageBytes, 200 * 1024 * 1024);
    assert.equal(imageBytesMax(sc.limits, "disk"), 200 * 1024 * 1024, "the spec's number holds for either root");
    const plain = parseScenario(parseYamlText("steps: [{action: start}]"));
    assert.equal(plain.memoryMib, undefined);
    assert.equal(plain.limits.imageBytes, undefined, "no number: the root decides");
    assert.equal(imageBytesMax(plain.limits, "initramfs"), 100 * 1024 * 1024);
    assert.equal(imageBytesMax(plain.limits, "disk"), 32 * 1024 ** 3);
    // a spec may ask for more than 1 GiB (a disk's ceiling is EROFS's), but an initramfs root never gets more than 1 GiB
    const big = parseScenario(parseYamlText(`steps: [{action: start}]\nlimits: {image-bytes: ${16 * 1024 ** 3}}`));
    assert.equal(imageBytesMax(big.limits, "disk"), 16 * 1024 ** 3);
    assert.equal(imageBytesMax(big.limits, "initramfs"), IMAGE_BYTES.initramfs.ceiling);
    assert.equal(defaultMemoryMib(8 * 1024 ** 3, "disk"), 256, "a root disk is read through the page cache: RAM does not follow it");
    // the default RAM: 256 MiB up to a 64 MiB image (no VM identity of a small run moved), then 128 + 3 x image, in 64 MiB steps
    assert.equal(defaultMemoryMib(1), 256);
    assert.equal(defaultMemoryMib(64 * 1024 * 1024), 256);
    assert.equal(defaultMemoryMib(64 * 1024 * 1024 + 1), 384);
    assert.equal(defaultMemoryMib(99 * 1024 * 1024), 448);
    assert.equal(defaultMemoryMib(162 * 1024 * 1024), 640);
  });

  it("a partial run section fills in the default steps (and, without expect, the default expectation) instead of being refused (issue 31, case 15)", () => {
    const onlyLimits = parseScenario(parseYamlText("limits: {time-ms: 5000}"));
    assert.deepEqual(onlyLimits.steps, DEFAULT_SCENARIO.steps);
    assert.deepEqual(onlyLimits.expect, DEFAULT_SCENARIO.expect);
    assert.deepEqual(onlyLimits.limits, { ...DEFAULT_RUN_LIMITS, timeMs: 5000 });
    const onlyExpect = parseScenario(parseYamlText("expect: [{exit-code: 3}]"));
    assert.deepEqual(onlyExpect.steps, DEFAULT_SCENARIO.steps);
    assert.deepEqual(onlyExpect.expect, [{ invocation: 1, exitCode: 3 }], "the section's own expectation, not the default's");
    const onlyRoot = parseScenario(parseYamlText("root: disk"));
    assert.deepEqual([onlyRoot.steps, onlyRoot.root], [DEFAULT_SCENARIO.steps, "disk"]);
    // control: steps given keep their meaning (no expectation added)
    assert.deepEqual(parseScenario(parseYamlText("steps: [{action: start}]")).expect, []);
    // an empty list is still refused: it says "nothing to run", which is not a default
    assert.throws(
      () => parseScenario(parseYamlText("steps: []")),
      (e: unknown) => e instanceof CairnError && e.path === "/run/steps",
    );
  });

  it("reports each problem of a run section once (issue 31, case 15: a missing field was reported three times)", () => {
    const issuesOf = (yaml: string): string[] => {
      try {
        parseScenario(parseYamlText(yaml));
      } catch (e) {
        assert.ok(e instanceof CairnError);
        return e.issues.map((i) => i.path);
      }
      assert.fail(`${yaml}: expected a refusal`);
    };
    const cases: Array<[string, string[]]> = [
      ["steps: 5", ["/run/steps"]],
      ["steps: [{after: {event: start}}]", ["/run/steps/0/action"]],
      ["steps: [{action: start}, {action: write-stdin}]", ["/run/steps/1/data"]],
      ["steps: [{action: start, after: {output: stdout}}]", ["/run/steps/0/after/contains"]],
      ["steps: [{action: close-stdin}]", ["/run/steps/0/action"]],
      ["steps: [{action: start}]\ninputs: [{to: /in/x}]", ["/run/inputs/0/from"]],
      ["limits: {image-bytes: 0}", ["/run/limits/image-bytes"]],
    ];
    for (const [yaml, paths] of cases) assert.deepEqual(issuesOf(yaml), paths, yaml);
  });

  it("reads run.verify-tree: content, and metadata as the default (no field)", () => {
    assert.equal(parseScenario(parseYamlText("steps: [{action: start}]\nverify-tree: content")).verifyTree, "content");
    assert.equal(parseScenario(parseYamlText("steps: [{action: start}]\nverify-tree: metadata")).verifyTree, undefined);
    assert.equal(parseScenario(parseYamlText("steps: [{action: start}]")).verifyTree, undefined);
  });

  it("checks assertions on lines and digests without copying output into results", () => {
    const d = decodeProtocol(oneRun(Buffer.from("pong\nsecret-output\n"), Buffer.alloc(0), 3));
    const r = checkAssertions([{ invocation: 1, exitCode: 0, stdoutLines: ["pong", "secret-output"], stdoutIncludes: ["missing"] }], d);
    assert.deepEqual(
      r.map((x) => [x.check, x.ok]),
      [
        ["exit-code", true],
        ["stdout-lines", true],
        ["stdout-includes", false],
      ],
    );
    assert.ok(!JSON.stringify(r).includes("secret"));
    assert.deepEqual(splitLines(Buffer.from("a\n\nb")).map(String), ["a", "", "b"]);
    assert.deepEqual(splitLines(Buffer.from("a\n")).map(String), ["a"]);
  });
});
