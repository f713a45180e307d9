/**
 * The run directory check (run-dir-check.ts; `runs list`, `runs show`, a
 * campaign's verify) covers checkpoints.qcow2 (issue 35, follow-up to item
 * 1): a record with checkpoints whose qcow2 is missing, replaced by a
 * symlink, of another size, or (when hashed: `runs show`, or with a key) of
 * another digest than run.json records is tampered, naming the field;
 * control: the recorded file is unverified, or signed with the receipt's key.
 * The run directory is written as `cairn run` writes it (no VM); the qcow2
 * is made by `qemu-img create` when it is installed (the check reads bytes,
 * not the format), else a file of bytes.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { generateSigningKey, sha256 } from "../../src/core/index.ts";
import { CHECKPOINT_FILE } from "../../src/vm/checkpoint-take.ts";
import { describeRun, signReceipt } from "../../src/vm/index.ts";
import { writeRunOrigin } from "../../src/vm/run-origin.ts";
import { runCli } from "../helpers/cli.ts";
import { writeRun } from "./fixtures/run-dirs.ts";

const ID = "20261201T000000Z-0000cccc";

function qcow2(file: string): void {
  try {
    execFileSync("qemu-img", ["create", "-q", "-f", "qcow2", file, "1M"], { stdio: "ignore" });
  } catch {
    writeFileSync(file, Buffer.alloc(4096, 0x51));
  }
}

/** A run with two checkpoints whose run.json records the qcow2's size and digest. */
function runWithCheckpoints(): string {
  const dir = join(mkdtempSync(join(tmpdir(), "cairn-run-ckpt-")), ID);
  writeRun(dir, ID, true);
  const file = join(dir, CHECKPOINT_FILE);
  qcow2(file);
  const bytes = readFileSync(file);
  const m = JSON.parse(readFileSync(join(dir, "run.json"), "utf8"));
  m.checkpoints = {
    file: { sha256: sha256(bytes), size: bytes.length },
    taken: [
      { name: "one", after: { step: 0 }, icount: 1000 },
      { name: "two", after: { output: "stdout", contains: "x" }, icount: 2000 },
    ],
  };
  writeFileSync(join(dir, "run.json"), JSON.stringify(m));
  return dir;
}

const flipLast = (file: string) => {
  const b = readFileSync(file);
  b[b.length - 1] = (b[b.length - 1] ?? 0) ^ 0xff;
  writeFileSync(file, b);
};

describe("the run directory check covers checkpoints.qcow2", () => {
  it("control: the recorded qcow2 is unverified (list and show) and signed with the receipt's key", async () => {
    const dir = runWithCheckpoints();
    assert.deepEqual([describeRun(dir).check, describeRun(dir, { checkpointDigest: true }).check], ["unverified", "unverified"]);
    const key = generateSigningKey();
    signReceipt(dir, [key]);
    assert.equal(describeRun(dir, { keys: [{ publicKey: key.publicKey, keyId: key.keyId }] }).check, "signed");
    const show = await runCli(["runs", "show", "--json", dir]);
    assert.equal(show.code, 0, show.stderr);
    assert.equal(JSON.parse(show.stdout).check, "unverified");
    rmSync(join(dir, ".."), { recursive: true, force: true });
  });

  it("a missing qcow2, a symlink in its place, or another size is tampered at /checkpoints/file/size", () => {
    const cases: Array<[string, (f: string) => void]> = [
      ["missing", (f) => rmSync(f)],
      [
        "symlink",
        (f) => {
          const real = `${f}.real`;
          writeFileSync(real, readFileSync(f));
          rmSync(f);
          symlinkSync(real, f);
        },
      ],
      ["longer", (f) => writeFileSync(f, Buffer.concat([readFileSync(f), Buffer.from([0])]))],
    ];
    for (const [what, change] of cases) {
      const dir = runWithCheckpoints();
      change(join(dir, CHECKPOINT_FILE));
      const r = describeRun(dir);
      assert.deepEqual([r.check, r.problem], ["tampered", "/checkpoints/file/size"], what);
      rmSync(join(dir, ".."), { recursive: true, force: true });
    }
  });

  it("a flipped byte (same size) is tampered at /checkpoints/file/sha256 in runs show and with a key; runs list checks the size only", async () => {
    const dir = runWithCheckpoints();
    const key = generateSigningKey();
    signReceipt(dir, [key]);
    flipLast(join(dir, CHECKPOINT_FILE));
    const shown = describeRun(dir, { checkpointDigest: true });
    assert.deepEqual([shown.check, shown.problem], ["tampered", "/checkpoints/file/sha256"]);
    const keyed = describeRun(dir, { keys: [{ publicKey: key.publicKey, keyId: key.keyId }] });
    assert.deepEqual([keyed.check, keyed.problem], ["tampered", "/checkpoints/file/sha256"]);
    assert.equal(describeRun(dir).check, "unverified", "runs list hashes no qcow2: what docs/runs.md says");
    const show = await runCli(["runs", "show", "--json", dir]);
    assert.deepEqual([JSON.parse(show.stdout).check, JSON.parse(show.stdout).problem], ["tampered", "/checkpoints/file/sha256"]);
    rmSync(join(dir, ".."), { recursive: true, force: true });
  });
});

const BRANCH_ID = "20261201T000001Z-0000eeee";
const BRANCH_FILES = { start: "branch-start.qcow2", prefix: "branch-prefix.bin", scenario: "branch.json" } as const;

/** A branch's run directory (`cairn branch`): run.json's `branch` records its three files' sizes and digests. */
function branchRun(): string {
  const dir = join(mkdtempSync(join(tmpdir(), "cairn-run-branch-")), BRANCH_ID);
  writeRun(dir, BRANCH_ID, true);
  qcow2(join(dir, BRANCH_FILES.start));
  writeFileSync(join(dir, BRANCH_FILES.prefix), Buffer.alloc(300, 0x11));
  writeFileSync(join(dir, BRANCH_FILES.scenario), "steps:\n  - action: close-stdin\n");
  const ref = (f: string) => {
    const b = readFileSync(join(dir, f));
    return { sha256: sha256(b), size: b.length };
  };
  const m = JSON.parse(readFileSync(join(dir, "run.json"), "utf8"));
  m.branch = {
    parent: { run_id: ID, outcome: m.outcome },
    checkpoint: { name: "one", icount: 1000, file: { sha256: sha256(Buffer.from("parent qcow2")), size: 12 } },
    start: ref(BRANCH_FILES.start),
    prefix: ref(BRANCH_FILES.prefix),
    scenario: ref(BRANCH_FILES.scenario),
  };
  writeFileSync(join(dir, "run.json"), JSON.stringify(m));
  return dir;
}

describe("the run directory check covers a branch's files", () => {
  it("control: a branch whose files are run.json's is unverified (list and show) and names its parent and checkpoint", async () => {
    const dir = branchRun();
    assert.deepEqual([describeRun(dir).check, describeRun(dir, { checkpointDigest: true }).check], ["unverified", "unverified"]);
    assert.deepEqual(describeRun(dir).branch, { parent: ID, checkpoint: "one", icount: 1000 });
    const show = await runCli(["runs", "show", "--json", dir]);
    assert.equal(show.code, 0, show.stderr);
    assert.deepEqual([JSON.parse(show.stdout).check, JSON.parse(show.stdout).branch.parent], ["unverified", ID]);
    rmSync(join(dir, ".."), { recursive: true, force: true });
  });

  it("runs list marks a branch imported from a bundle by run.json's branch (its origin says bundle); runs show --html has a branch row (control: a run from boot has neither)", async () => {
    const dir = branchRun();
    writeRunOrigin(dir, { via: "bundle", input: "/elsewhere/branch.cairn", command: null });
    const plain = join(dir, "..", ID);
    writeRun(plain, ID, true);
    const listed = await runCli(["runs", "list", "--runs", join(dir, "..")]);
    assert.equal(listed.code, 0, listed.stderr);
    const line = (id: string) => listed.stdout.split("\n").find((l) => l.startsWith(id)) ?? "";
    assert.match(line(BRANCH_ID), new RegExp(`bundle branch\\.cairn, branch ${ID}@one$`), listed.stdout);
    assert.doesNotMatch(line(ID), /branch/, "control: a run from boot");
    const page = join(dir, "..", "page.html");
    assert.equal((await runCli(["runs", "show", dir, "--html", page])).code, 0);
    assert.match(readFileSync(page, "utf8"), new RegExp(`<td id="branch">of run <code>${ID}</code> at checkpoint <code>one</code>`));
    assert.equal((await runCli(["runs", "show", plain, "--html", page])).code, 0);
    assert.doesNotMatch(readFileSync(page, "utf8"), /id="branch"/, "control: a run from boot");
    rmSync(join(dir, ".."), { recursive: true, force: true });
  });

  it("each of branch-start.qcow2, branch-prefix.bin and branch.json missing, a symlink, or of another size is tampered at /branch/<field>/size", () => {
    const changes: Array<[string, (f: string) => void]> = [
      ["missing", (f) => rmSync(f)],
      [
        "symlink",
        (f) => {
          const real = `${f}.real`;
          writeFileSync(real, readFileSync(f));
          rmSync(f);
          symlinkSync(real, f);
        },
      ],
      ["longer", (f) => writeFileSync(f, Buffer.concat([readFileSync(f), Buffer.from([0])]))],
    ];
    for (const [field, name] of Object.entries(BRANCH_FILES))
      for (const [what, change] of changes) {
        const dir = branchRun();
        change(join(dir, name));
        const r = describeRun(dir);
        assert.deepEqual([r.check, r.problem], ["tampered", `/branch/${field}/size`], `${name} ${what}`);
        rmSync(join(dir, ".."), { recursive: true, force: true });
      }
  });

  it("a flipped byte (same size) is tampered at /branch/<field>/sha256 in runs show and with a key; runs list checks sizes only", () => {
    for (const [field, name] of Object.entries(BRANCH_FILES)) {
      const dir = branchRun();
      const key = generateSigningKey();
      signReceipt(dir, [key]);
      flipLast(join(dir, name));
      const shown = describeRun(dir, { checkpointDigest: true });
      assert.deepEqual([shown.check, shown.problem], ["tampered", `/branch/${field}/sha256`], name);
      const keyed = describeRun(dir, { keys: [{ publicKey: key.publicKey, keyId: key.keyId }] });
      assert.deepEqual([keyed.check, keyed.problem], ["tampered", `/branch/${field}/sha256`], name);
      assert.equal(describeRun(dir).check, "unverified", `${name}: runs list hashes no branch file`);
      rmSync(join(dir, ".."), { recursive: true, force: true });
    }
  });
});
