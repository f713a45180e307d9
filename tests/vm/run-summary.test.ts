/**
 * `cairn runs list` and `cairn runs show` (issue 9, item 4, part): run
 * directories read through the strict, bounded manifest reader; each
 * replay's verdict from its result.json; a directory whose run.json is
 * refused is listed as unreadable with the code; the runs root's marker
 * and a symlink to a run are not runs (a symlink is never followed).
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import type { Sha256Digest } from "../../src/core/index.ts";
import { defaultVmIdentity, describeRun, listRuns, vmDigest } from "../../src/vm/index.ts";
import { runCli } from "../helpers/cli.ts";

const d = (c: string) => `sha256:${c.repeat(64)}` as Sha256Digest;

function manifest(runId: string, disk: boolean) {
  const vm = defaultVmIdentity({
    qemu: "7.2.22 (Debian test)",
    kernel: d("a"),
    modules: [],
    agent: d("b"),
    initramfs: d("c"),
    treeManifest: d("f"),
    memoryMib: 256,
    ...(disk ? { disk: { image: d("9"), size: 8192 } } : {}),
  });
  return {
    schema: "cairn.run/1",
    run_id: runId,
    status: "passed",
    workload: { source_kind: "oci", workload: d("1"), source: d("2"), fs: d("3"), launch: d("4"), derived: d("5") },
    guest_image: { initramfs: d("c"), size: 512, inputs: d("6") },
    vm,
    vm_digest: vmDigest(vm),
    replay_log: { sha256: d("7"), size: 100 },
    outcome: d("8"),
    recorded: { at: "2026-12-01T00:00:00.000Z", cairn_version: "test" },
  };
}

function runsDir(): string {
  const root = mkdtempSync(join(tmpdir(), "cairn-runs-"));
  const a = join(root, "20261201T000000Z-0000aaaa");
  mkdirSync(join(a, "replays", "1"), { recursive: true });
  mkdirSync(join(a, "replays", "2"));
  mkdirSync(join(a, "replays", "3"));
  writeFileSync(join(a, "run.json"), JSON.stringify(manifest("20261201T000000Z-0000aaaa", true)));
  writeFileSync(join(a, "replays", "1", "result.json"), JSON.stringify({ matches: true }));
  writeFileSync(join(a, "replays", "3", "result.json"), JSON.stringify({ matches: false }));
  const b = join(root, "20261201T000001Z-0000bbbb");
  mkdirSync(b);
  writeFileSync(join(b, "run.json"), JSON.stringify({ ...manifest("20261201T000001Z-0000bbbb", false), extra: 1 }));
  writeFileSync(join(root, "cairn-runs.json"), "{}");
  symlinkSync(a, join(root, "zz-link"));
  return root;
}

describe("cairn runs list / show", () => {
  it("lists every run with its replays' verdicts and root; a refused manifest is listed unreadable; the marker and a symlink are not runs", () => {
    const root = runsDir();
    const { runs, unreadable } = listRuns(root);
    assert.deepEqual(
      runs.map((r) => [r.run_id, r.status, r.root, r.replays]),
      [["20261201T000000Z-0000aaaa", "passed", "disk", [true, null, false]]],
    );
    assert.deepEqual(unreadable, [{ dir: join(root, "20261201T000001Z-0000bbbb"), error: "MODEL_UNKNOWN_FIELD" }]);
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
    assert.match(list.stdout, /20261201T000000Z-0000aaaa {2}passed +replays \+\?- +disk/);
    assert.match(list.stdout, /0000bbbb {2}unreadable \(MODEL_UNKNOWN_FIELD\)/);
    const byId = await runCli(["runs", "show", "20261201T000000Z-0000aaaa", "--runs", root]);
    const byDir = await runCli(["runs", "show", join(root, "20261201T000000Z-0000aaaa")]);
    assert.equal(byId.code, 0, byId.stderr);
    assert.equal(byId.stdout, byDir.stdout);
    assert.match(byId.stdout, /replays {3}1: matched, 2: no result, 3: did not match/);
    assert.match(byId.stdout, /\(disk root, 256 MiB\)/);
    const json = await runCli(["runs", "show", "--json", join(root, "20261201T000000Z-0000aaaa")]);
    assert.deepEqual(JSON.parse(json.stdout), JSON.parse(JSON.stringify(describeRun(join(root, "20261201T000000Z-0000aaaa")))));
    const missing = await runCli(["runs", "show", "nope", "--runs", root]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /RUN_INVALID|not a run directory/);
  });
});
