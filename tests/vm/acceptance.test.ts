/**
 * Acceptance (issue 5, part 7): the probe workload as a binary spec and as a
 * minimal OCI layout, each recorded once and replayed passively twice with
 * byte-identical normalized events, assertions and outcome digests; the OCI
 * conformance fixture as the guest sees it; a dynamically linked OCI
 * workload recorded and replayed; and proof that host files and host
 * environment variables never enter the workload.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { recordRun, replayRun, type RecordResult } from "../../src/vm/index.ts";
import { CONFORMANCE_TREE } from "../workload/fixtures/conformance.ts";
import { testKit, VM_SKIP } from "./fixtures/kit.ts";
import { binaryWorkspace, conformanceWorkspace, dynamicOciWorkspace, minimalOciWorkspace, SECRET, type Workspace } from "./fixtures/workloads.ts";

async function record(ws: Workspace, memoKeyDir?: string, log?: (line: string) => void): Promise<RecordResult> {
  return recordRun({
    input: ws.specPath,
    storeDir: ws.storeDir,
    runsDir: ws.runsDir,
    kit: await testKit(),
    cairnVersion: "test",
    ...(memoKeyDir !== undefined ? { verify: { memoKeyDir } } : {}),
    ...(log !== undefined ? { log } : {}),
  });
}

function stdout(runDir: string, inv = 1): string[] {
  return readFileSync(join(runDir, "streams", `${inv}.stdout`), "utf8")
    .split("\n")
    .filter((l) => l !== "");
}

/**
 * With `memoKeyDir`, the record and the odd-numbered replays verify under
 * this machine's verify memos (the assembly writes one), the even-numbered
 * replays re-derive: both must replay alike.
 */
async function recordAndReplay(ws: Workspace, replays: number, memoKeyDir?: string): Promise<RecordResult> {
  const lines: string[] = [];
  const r = await record(ws, memoKeyDir, (l) => lines.push(l));
  if (memoKeyDir !== undefined)
    assert.ok(
      lines.some((l) => /^workload verified under this machine's memo of its assembly .*not re-derived$/.test(l)),
      lines.join("\n"),
    );
  assert.equal(r.manifest.status, "passed", JSON.stringify(r.evaluation.assertions));
  const events = readFileSync(join(r.runDir, "events.json"));
  const assertions = readFileSync(join(r.runDir, "assertions.json"));
  for (let i = 1; i <= replays; i++) {
    const underMemo = memoKeyDir !== undefined && i % 2 === 1;
    const said: string[] = [];
    const p = await replayRun({
      runDir: r.runDir,
      storeDir: ws.storeDir,
      kit: await testKit(),
      ...(underMemo ? { verify: { memoKeyDir } } : {}),
      log: (l) => said.push(l),
    });
    if (memoKeyDir !== undefined)
      assert.ok(
        said.some((l) => (underMemo ? /memo of its assembly .*derived entry read back/ : /^workload re-derived from its raw closure$/).test(l)),
        said.join("\n"),
      );
    assert.equal(p.evaluation.outcome, r.manifest.outcome);
    assert.ok(readFileSync(join(p.replayDir, "events.json")).equals(events), `replay ${i}: events byte-identical`);
    assert.ok(readFileSync(join(p.replayDir, "assertions.json")).equals(assertions), `replay ${i}: assertions byte-identical`);
    assert.ok(
      readFileSync(join(p.replayDir, "protocol.bin")).equals(readFileSync(join(r.runDir, "protocol.bin"))),
      `replay ${i}: protocol stream byte-identical`,
    );
  }
  return r;
}

describe("record and replay acceptance", { skip: VM_SKIP }, () => {
  it("binary spec: recorded once, replayed twice identically; no host file or variable enters", async () => {
    process.env.CAIRN_HOST_CANARY = "host-env-canary";
    try {
      const ws = binaryWorkspace();
      const r = await recordAndReplay(ws, 2);
      const out = stdout(r.runDir);
      // control: the launch environment is there, and nothing else
      const env = out.filter((l) => l.startsWith("env "));
      assert.deepEqual(env, [`env GREETING=${SECRET}`, "env done"]);
      const all = readFileSync(join(r.runDir, "streams", "1.stdout"), "utf8");
      assert.ok(!all.includes("host-env-canary") && !all.includes("host-canary") && !all.includes("CAIRN_HOST_CANARY"));
      assert.deepEqual(
        out.filter((l) => l.startsWith("entry ")).map((l) => l.replace(/ size=\d+$/, "")),
        [
          "entry / dir 0755 0 0 0 -",
          "entry /bin dir 0755 0 0 0 -",
          "entry /bin/app file 0755 1000 1000 0",
          "entry /dev dir 0755 0 0 0 -",
          "entry /dev/null chr 0666 0 0 0 1:3",
          "entry /dev/zero chr 0666 0 0 0 1:5",
          "entry /tmp dir 1777 0 0 0 -",
        ],
      );
      // shareable files carry no secret
      for (const f of ["run.json", "events.json", "assertions.json", "replay-command.txt"])
        assert.ok(!readFileSync(join(r.runDir, f), "utf8").includes(SECRET), f);
    } finally {
      delete process.env.CAIRN_HOST_CANARY;
    }
  });

  it("minimal OCI layout: recorded once, replayed twice identically, under the assembly's verify memo and re-derived", async () => {
    const r = await recordAndReplay(minimalOciWorkspace(), 2, join(mkdtempSync(join(tmpdir(), "cairn-keys-")), "keys"));
    assert.ok(stdout(r.runDir).includes("env A=1"));
    assert.equal(r.manifest.workload.source_kind, "oci");
  });

  it("OCI conformance fixture: modes, owners, mtimes, symlinks, replacements, whiteouts and opaque dirs as the guest sees them", async () => {
    const r = await record(conformanceWorkspace());
    assert.equal(r.manifest.status, "passed");
    const seen = stdout(r.runDir).filter((l) => /^(entry|denied|unlisted|absent) /.test(l));
    const lines: string[] = [];
    for (const [path, type, mode, uid, gid, mtime, content] of CONFORMANCE_TREE) {
      // the runtime overlay owns /tmp: its metadata is replaced (cairn.overlay/1)
      const [m, t] = path === "/tmp" ? [0o1777, 0] : [mode, mtime];
      const shown = type === "dir" ? "-" : type === "symlink" ? content : readable(path, m, uid, gid) ? Buffer.from(content).toString("hex") : "noread";
      if (visible(path)) lines.push(`entry ${path} ${type} ${m.toString(8).padStart(4, "0")} ${uid} ${gid} ${t} ${shown}`);
      if (type === "dir" && visible(path) && !listable(path, mode, uid, gid)) lines.push(`unlisted ${path}`);
    }
    lines.push("entry /dev dir 0755 0 0 0 -", "entry /dev/null chr 0666 0 0 0 1:3", "entry /dev/zero chr 0666 0 0 0 1:5");
    const probe = seen.find((l) => l.startsWith("entry /probe "));
    assert.ok(probe?.startsWith("entry /probe file 0755 0 0 1700000000 size="));
    assert.deepEqual(seen.filter((l) => l !== probe).sort(), lines.sort());
  });

  it("dynamically linked OCI workload runs and replays", async () => {
    await recordAndReplay(dynamicOciWorkspace(), 1);
  });
});

// What uid 1000 / gid 1000 may see of the conformance tree, by the ordinary permission rules.
const byPath = new Map(CONFORMANCE_TREE.map((e) => [e[0], e]));
function may(path: string, bit: number): boolean {
  const e = byPath.get(path)!;
  const [, , mode, uid, gid] = e;
  const shift = uid === 1000 ? 6 : gid === 1000 ? 3 : 0;
  return ((mode >> shift) & bit) !== 0;
}
function visible(path: string): boolean {
  if (path === "/") return true;
  const parent = path.slice(0, path.lastIndexOf("/")) || "/";
  return visible(parent) && listable(parent, 0, 0, 0) && may(parent, 1);
}
function listable(path: string, _m: number, _u: number, _g: number): boolean {
  return may(path, 4) && may(path, 1);
}
function readable(path: string, _m: number, _u: number, _g: number): boolean {
  return may(path, 4);
}
