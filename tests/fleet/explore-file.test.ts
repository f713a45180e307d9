/**
 * `cairn explore`'s vary file and what explore refuses before a kit or a
 * QEMU (issue 35 item 5), without a VM: the file is read strictly (unknown
 * fields, pointers outside the tail, pointers naming nothing in it, empty
 * axes, the count of variations), each refusal naming its pointer, next to
 * the example's own vary file as the control; the variations are the cross
 * product, first axis slowest, each named by what it set; the comparison
 * with the parent names the first differing event, else assertion; and
 * explore refuses a parent without checkpoints, a checkpoint it did not
 * take, a parent whose events were edited, and a bad --jobs, all before the
 * kit is asked for.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { CairnError, isCairnError } from "../../src/core/index.ts";
import { differenceFrom, explore, parseVaryFile, readVaryFile, variations } from "../../src/fleet/index.ts";
import { runCli } from "../helpers/cli.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { d, manifest, writeRun } from "../vm/fixtures/run-dirs.ts";

const work = mkdtempSync(join(tmpdir(), "cairn-explore-file-"));
after(() => rmSync(work, { recursive: true, force: true }));

const EXAMPLE = join(PROJECT_ROOT, "examples", "network", "explore-vary.yaml");

function refusedAt(text: string, code: string, path: string): void {
  assert.throws(
    () => variations(parseVaryFile(Buffer.from(text), "vary.yaml")),
    (e: unknown) => isCairnError(e) && (e.code === code || e.issues.some((i) => i.code === code)) && (e.path === path || e.issues.some((i) => i.path === path)),
    `${code} at ${path}`,
  );
}

const TAIL = `steps:
  - action: network-up
    after: {output: stdout, contains: "x"}
  - action: close-stdin
`;

describe("the vary file", () => {
  it("the example gives ten branches, each named by the value it set and its tail holding it (control for every refusal below)", () => {
    const vs = variations(readVaryFile(EXAMPLE));
    assert.equal(vs.length, 10);
    assert.deepEqual(
      vs.map((v) => v.name),
      Array.from({ length: 10 }, (_, i) => `/steps/0/after/contains=fetch 2 attempt ${i + 1}:`),
    );
    for (const [i, v] of vs.entries()) {
      const tail = JSON.parse(v.tail.toString("utf8")) as { steps: { after?: { contains: string } }[] };
      assert.equal(tail.steps[0]?.after?.contains, `fetch 2 attempt ${i + 1}:`);
      assert.equal(tail.steps.length, 2);
      assert.deepEqual(v.set, [{ pointer: "/steps/0/after/contains", value: `fetch 2 attempt ${i + 1}:` }]);
    }
  });

  it("two axes: the cross product, first axis slowest; an expect pointer and a non-string value are named as JSON", () => {
    const text = `${TAIL}expect:\n  - exit-code: 0\nvary:\n  - set: /steps/0/after/contains\n    values: [a, b]\n  - set: /expect/0/exit-code\n    values: [0, 3]\n`;
    const vs = variations(parseVaryFile(Buffer.from(text), "vary.yaml"));
    assert.deepEqual(
      vs.map((v) => v.name),
      [
        "/steps/0/after/contains=a, /expect/0/exit-code=0",
        "/steps/0/after/contains=a, /expect/0/exit-code=3",
        "/steps/0/after/contains=b, /expect/0/exit-code=0",
        "/steps/0/after/contains=b, /expect/0/exit-code=3",
      ],
    );
    assert.equal((JSON.parse(vs[3]!.tail.toString()) as { expect: { "exit-code": number }[] }).expect[0]!["exit-code"], 3);
  });

  it("refuses, naming the pointer: an unknown field, no vary, an empty axis, a pointer outside the tail or naming nothing in it, the same pointer twice", () => {
    const vary = "vary:\n  - set: /steps/0/after/contains\n    values: [a]\n";
    assert.doesNotThrow(() => variations(parseVaryFile(Buffer.from(TAIL + vary), "vary.yaml")), "control");
    refusedAt(`${TAIL + vary}runs: 3\n`, "MODEL_UNKNOWN_FIELD", "/runs");
    refusedAt(TAIL, "RUN_INVALID", "/vary");
    refusedAt(`${TAIL}vary: []\n`, "RUN_INVALID", "/vary");
    refusedAt(`${TAIL}vary:\n  - set: /steps/0/after/contains\n    values: []\n`, "RUN_INVALID", "/vary/0/values");
    refusedAt(`${TAIL}vary:\n  - set: /run/steps/0\n    values: [a]\n`, "RUN_INVALID", "/vary/0/set");
    refusedAt(`${TAIL}vary:\n  - set: /steps/5/after/contains\n    values: [a]\n`, "RUN_INVALID", "/vary/0/set");
    refusedAt(`${TAIL}vary:\n  - set: /steps/1/after/contains\n    values: [a]\n`, "RUN_INVALID", "/vary/0/set"); // close-stdin has no after
    refusedAt(`${TAIL}vary:\n  - set: /steps/0/__proto__\n    values: [a]\n`, "RUN_INVALID", "/vary/0/set");
    refusedAt(`${TAIL + vary}  - set: /steps/0/after/contains\n    values: [b]\n`, "RUN_INVALID", "/vary/1/set");
    refusedAt(`steps: 3\n${vary}`, "MODEL_TYPE", "/steps");
  });

  it("a name never carries a control character raw, and shows at most 80 characters of a value (second pass: terminal escapes in a vary file reached the terminal)", () => {
    const long = "x".repeat(1000);
    const text = `${TAIL}vary:\n  - set: /steps/0/after/contains\n    values: ["\\e]0;pwned\\a", ${JSON.stringify(long)}, plain words]\n`;
    const vs = variations(parseVaryFile(Buffer.from(text), "vary.yaml"));
    assert.equal(vs[0]!.name, '/steps/0/after/contains="\\u001b]0;pwned\\u0007"');
    assert.doesNotMatch(vs.map((v) => v.name).join(""), /[\u0000-\u001f]/);
    assert.equal(vs[1]!.name, `/steps/0/after/contains=${"x".repeat(80)}…`);
    assert.equal(vs[1]!.set[0]!.value, long, "the report's set keeps the value whole");
    assert.equal(vs[2]!.name, "/steps/0/after/contains=plain words", "control");
  });

  it("counts the variations from the axes alone, before one is built (explore.variations)", () => {
    const values = `[${Array.from({ length: 40 }, (_, i) => i).join(", ")}]`;
    const two = `${TAIL}vary:\n  - set: /steps/0/after/contains\n    values: ${values}\n  - set: /steps/0/action\n    values: ${values}\n`;
    assert.throws(
      () => parseVaryFile(Buffer.from(two), "vary.yaml"),
      (e: unknown) => isCairnError(e) && e.code === "LIMIT_EXCEEDED" && e.path === "/vary" && e.message.includes("explore.variations"),
    );
    const one = `${TAIL}vary:\n  - set: /steps/0/after/contains\n    values: ${values}\n`;
    assert.equal(variations(parseVaryFile(Buffer.from(one), "vary.yaml")).length, 40, "control");
  });
});

describe("the comparison with the parent", () => {
  const parent = { events: [{ e: 1 }, { e: 2 }], assertions: [{ a: 1 }], outcome: d("1") };
  it("the same outcome does not differ; else the first differing event, else the first differing assertion", () => {
    assert.deepEqual(differenceFrom(parent, { ...parent }), { from_parent: false, at: null });
    assert.deepEqual(differenceFrom(parent, { ...parent, events: [{ e: 1 }, { e: 3 }], outcome: d("2") }), { from_parent: true, at: "/events/1" });
    assert.deepEqual(differenceFrom(parent, { ...parent, events: [{ e: 1 }], outcome: d("2") }), { from_parent: true, at: "/events/1" });
    assert.deepEqual(differenceFrom(parent, { ...parent, assertions: [{ a: 2 }], outcome: d("2") }), { from_parent: true, at: "/assertions/0" });
  });
});

describe("explore refuses before the kit is asked for", () => {
  const vary = join(work, "vary.yaml");
  writeFileSync(vary, `${TAIL}vary:\n  - set: /steps/0/after/contains\n    values: [a]\n`);
  const KIT_ASKED = "the kit was asked for";
  const kit = () => Promise.reject(new CairnError("PREREQUISITE_MISSING", KIT_ASKED));
  const opts = (runDir: string, checkpoint: string) => ({
    runDir,
    checkpoint,
    vary,
    storeDir: join(work, "store"),
    runsDir: join(work, "runs"),
    kit,
    cairnVersion: "test",
  });
  const withCheckpoint = (dir: string) => {
    const m = {
      ...manifest("20261201T000000Z-0000000a", true),
      checkpoints: { file: { sha256: d("8"), size: 4096 }, taken: [{ name: "warm", after: { step: 1 }, icount: 1000 }] },
    };
    writeFileSync(join(dir, "run.json"), JSON.stringify(m));
  };
  const code = (c: string, path: string) => (e: unknown) => isCairnError(e) && e.code === c && e.path === path;

  it("a parent without checkpoints; a checkpoint it did not take (listing those it took); control: the one it took reaches the kit", async () => {
    const plain = join(work, "plain");
    writeRun(plain, "20261201T000000Z-0000000a", true);
    await assert.rejects(explore(opts(plain, "warm")), code("RUN_INVALID", "/checkpoints"));
    const ck = join(work, "ck");
    writeRun(ck, "20261201T000000Z-0000000a", true);
    withCheckpoint(ck);
    await assert.rejects(explore(opts(ck, "cold")), (e: unknown) => code("RUN_INVALID", "--at")(e) && (e as Error).message.includes("it took warm"));
    await assert.rejects(explore(opts(ck, "warm")), (e: unknown) => isCairnError(e) && e.message === KIT_ASKED, "control");
  });

  it("a parent that is itself a branch, said once before the kit (second pass: each variation was refused on its own)", async () => {
    const ck = join(work, "branch-parent");
    writeRun(ck, "20261201T000000Z-0000000a", true);
    withCheckpoint(ck);
    await assert.rejects(explore(opts(ck, "warm")), (e: unknown) => isCairnError(e) && e.message === KIT_ASKED, "control: not a branch");
    const m = JSON.parse(readFileSync(join(ck, "run.json"), "utf8")) as Record<string, unknown>;
    const ref = { sha256: d("9"), size: 10 };
    m.branch = {
      parent: { run_id: "20261130T000000Z-0000000b", outcome: d("1") },
      checkpoint: { name: "x", icount: 5, file: ref },
      start: ref,
      prefix: ref,
      scenario: ref,
    };
    writeFileSync(join(ck, "run.json"), JSON.stringify(m));
    await assert.rejects(explore(opts(ck, "warm")), code("RUN_INVALID", "/branch"));
  });

  it("a parent whose events.json is not the one its outcome names", async () => {
    const ck = join(work, "edited");
    writeRun(ck, "20261201T000000Z-0000000a", true);
    withCheckpoint(ck);
    const events = JSON.parse(readFileSync(join(ck, "events.json"), "utf8")) as { code?: number }[];
    events[1]!.code = 0;
    writeFileSync(join(ck, "events.json"), JSON.stringify(events));
    await assert.rejects(explore(opts(ck, "warm")), code("RUN_INVALID", "/outcome"));
  });

  it("--jobs that is not a positive integer, or over explore.jobs; a vary file that is not there", async () => {
    const ck = join(work, "jobs");
    writeRun(ck, "20261201T000000Z-0000000a", true);
    withCheckpoint(ck);
    await assert.rejects(explore({ ...opts(ck, "warm"), jobs: 0 }), code("USAGE", "--jobs"));
    await assert.rejects(explore({ ...opts(ck, "warm"), jobs: 65 }), code("LIMIT_EXCEEDED", "--jobs"));
    await assert.rejects(explore({ ...opts(ck, "warm"), jobs: 64 }), (e: unknown) => isCairnError(e) && e.message === KIT_ASKED, "control");
    await assert.rejects(explore({ ...opts(ck, "warm"), vary: join(work, "absent.yaml") }), (e: unknown) => isCairnError(e) && e.code === "USAGE");
    const r = await runCli(["explore", ck, "--at", "warm", "--vary", vary, "--jobs", "two", "--json"]);
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.equal((JSON.parse(r.stdout) as { error: { path: string } }).error.path, "--jobs");
  });
});
