/**
 * The agent's C side against independent oracles: its SHA-256 against
 * node:crypto, its wire constants against src/vm/wire.ts, its build
 * reproducibility, and the inputs encoder against the agent's own parser
 * (exercised through a small harness that links agent/inputs.c), and the
 * tree check (agent/verify.c) against manifests the host encodes.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { sha256 } from "../../src/core/index.ts";
import type { FsEntry } from "../../src/tree/entries.ts";
import { AGENT_SOURCE_DIR, buildAgent, DEFAULT_RUN_LIMITS, encodeInputs, encodeTreeManifest, parseScenario, treeManifestBytes } from "../../src/vm/index.ts";
import { encodeSteps } from "../../src/vm/inputs.ts";
import { ACTION, CHANNEL_KIND, HOLD, INFRA_REASONS, LAUNCH_STAGES, RECORD } from "../../src/vm/wire.ts";
import { GCC_SKIP } from "../workload/fixtures/static-program.ts";

const header = readFileSync(join(AGENT_SOURCE_DIR, "agent.h"), "utf8");

function enumValue(name: string): number {
  const m = new RegExp(`\\b${name} = (\\d+)`).exec(header);
  assert.ok(m, `${name} in agent.h`);
  return Number(m[1]);
}

const HARNESS = `
#include <stdio.h>
#include <string.h>
#include "agent.h"
void diag(const char *fmt, ...) { (void)fmt; }
int main(int argc, char **argv) {
  if (!strcmp(argv[1], "sha")) {
    static unsigned char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, stdin);
    sha256_ctx c; uint8_t out[32];
    sha256_init(&c);
    for (size_t i = 0; i < n; i += 7) sha256_update(&c, buf + i, n - i < 7 ? n - i : 7);
    sha256_final(&c, out);
    for (int i = 0; i < 32; i++) printf("%02x", out[i]);
    return 0;
  }
  if (!strcmp(argv[1], "tree")) {
    uint64_t detail = 0;
    int r = tree_verify(argv[2], argv[3], &detail);
    printf("%s %llu\\n", r == TREE_OK ? "ok" : r == TREE_DIFFERS ? "differs" : "malformed", (unsigned long long)detail);
    return 0;
  }
  struct inputs in;
  if (!strcmp(argv[1], "tail")) {
    static unsigned char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, stdin);
    if (steps_parse(buf, n, &in.nsteps, &in.steps) < 0) { printf("refused\\n"); return 0; }
  } else if (inputs_load(argv[2], &in) < 0) { printf("refused\\n"); return 0; } else {
  printf("uid=%u gid=%u path=%s workdir=%s out=%llu time=%llu frame=%u\\n", in.uid, in.gid, in.path, in.workdir,
         (unsigned long long)in.output_limit, (unsigned long long)in.time_limit_ms, in.frame_bytes);
  for (char **a = in.argv; *a; a++) printf("argv=%s\\n", *a);
  for (char **e = in.envp; *e; e++) printf("env=%s\\n", *e);
  for (unsigned i = 0; i < in.nholds; i++)
    printf("hold=%u stream=%u after=%u pat=%.*s\\n", in.holds[i].kind, in.holds[i].stream, in.holds[i].step, (int)in.holds[i].pattern_len, in.holds[i].pattern);
  }
  for (unsigned i = 0; i < in.nsteps; i++)
    printf("step=%u trig=%u arg=%u pat=%.*s off=%llu data=%.*s\\n", in.steps[i].action, in.steps[i].trigger, in.steps[i].trigger_arg,
           (int)in.steps[i].pattern_len, in.steps[i].pattern, (unsigned long long)in.steps[i].offset, (int)in.steps[i].data_len, in.steps[i].data);
  return 0;
}`;

function harness(): string {
  const dir = mkdtempSync(join(tmpdir(), "cairn-agent-harness-"));
  writeFileSync(join(dir, "harness.c"), HARNESS);
  const exe = join(dir, "harness");
  execFileSync(
    "gcc",
    [
      "-O2",
      "-I",
      AGENT_SOURCE_DIR,
      "-o",
      exe,
      join(dir, "harness.c"),
      join(AGENT_SOURCE_DIR, "sha256.c"),
      join(AGENT_SOURCE_DIR, "inputs.c"),
      join(AGENT_SOURCE_DIR, "verify.c"),
    ],
    { stdio: "pipe" },
  );
  return exe;
}

describe("guest agent sources", { skip: GCC_SKIP }, () => {
  const exe = harness();

  it("computes SHA-256 like node:crypto", () => {
    for (const n of [0, 1, 55, 56, 63, 64, 65, 1000, 100_003]) {
      const data = Buffer.alloc(n);
      for (let i = 0; i < n; i++) data[i] = (i * 31 + 7) & 0xff;
      const got = execFileSync(exe, ["sha"], { input: data }).toString();
      assert.equal(got, createHash("sha256").update(data).digest("hex"), `length ${n}`);
    }
  });

  it("shares every wire number with src/vm/wire.ts", () => {
    const rec: Record<string, string> = {
      hello: "REC_HELLO",
      start: "REC_START",
      frame: "REC_FRAME",
      "input-accepted": "REC_INPUT_ACCEPTED",
      "stdin-closed": "REC_STDIN_CLOSED",
      "requested-termination": "REC_TERMINATE_REQUESTED",
      exit: "REC_EXIT",
      "launch-failure": "REC_LAUNCH_FAILURE",
      "cleanup-complete": "REC_CLEANUP_COMPLETE",
      "infra-failure": "REC_INFRA_FAILURE",
      final: "REC_FINAL",
      "input-rejected": "REC_INPUT_REJECTED",
      hold: "REC_HOLD",
    };
    for (const [k, v] of Object.entries(RECORD)) assert.equal(enumValue(rec[k]!), v, k);
    for (const [n, name] of Object.entries(LAUNCH_STAGES)) assert.equal(enumValue(`STAGE_${name.toUpperCase().replaceAll("-", "_")}`), Number(n), name);
    const infra: Record<string, string> = {
      "stdin-queue-limit": "INFRA_STDIN_QUEUE_LIMIT",
      "bad-input-offset": "INFRA_BAD_INPUT_OFFSET",
      "scenario-stuck": "INFRA_SCENARIO_STUCK",
      "inputs-malformed": "INFRA_INPUTS_MALFORMED",
      "no-invocation": "INFRA_NO_INVOCATION",
    };
    for (const [n, name] of Object.entries(INFRA_REASONS))
      assert.equal(enumValue(infra[name] ?? `INFRA_${name.toUpperCase().replaceAll("-", "_")}`), Number(n), name);
  });

  it("parses exactly what the host encodes, and refuses a truncated or trailing-garbage file", () => {
    const scenario = parseScenario({
      steps: [
        { action: "start" },
        { action: "write-stdin", data: "hi", after: { output: "stderr", contains: "go" } },
        { action: "close-stdin", after: { event: "input-accepted" } },
      ],
      limits: { "output-bytes": 99 },
    });
    const bytes = encodeInputs({ path: "/bin/x", argv: ["/bin/x", "a b"], env: ["K=v w"], workdir: "/w", uid: 7, gid: 8 }, scenario);
    const dir = mkdtempSync(join(tmpdir(), "cairn-inputs-"));
    const f = join(dir, "inputs");
    writeFileSync(f, bytes);
    assert.equal(
      execFileSync(exe, ["inputs", f]).toString(),
      [
        `uid=7 gid=8 path=/bin/x workdir=/w out=99 time=${DEFAULT_RUN_LIMITS.timeMs} frame=4096`,
        "argv=/bin/x",
        "argv=a b",
        "env=K=v w",
        "step=1 trig=0 arg=0 pat= off=0 data=",
        "step=2 trig=2 arg=2 pat=go off=0 data=hi",
        `step=3 trig=1 arg=${RECORD["input-accepted"]} pat= off=0 data=`,
        "",
      ].join("\n"),
    );
    writeFileSync(f, bytes.subarray(0, bytes.length - 1));
    assert.equal(execFileSync(exe, ["inputs", f]).toString(), "refused\n");
    writeFileSync(f, Buffer.concat([bytes, Buffer.from([0])]));
    assert.equal(execFileSync(exe, ["inputs", f]).toString(), "refused\n");
  });

  it("reads a run's holds (run.checkpoints) and a branch's tail as the host encodes them; refuses a hold on a step that does not exist", () => {
    for (const [k, v] of Object.entries(HOLD)) assert.equal(enumValue(`HOLD_${k.toUpperCase()}`), v, k);
    for (const [k, v] of Object.entries(CHANNEL_KIND)) assert.equal(enumValue(`CHAN_${k.toUpperCase()}`), v, k);
    const scenario = parseScenario({
      steps: [{ action: "start" }, { action: "close-stdin" }],
      checkpoints: [
        { name: "a", after: { step: 1 } },
        { name: "b", after: { output: "stderr", contains: "go on" } },
      ],
    });
    const dir = mkdtempSync(join(tmpdir(), "cairn-inputs-"));
    const f = join(dir, "inputs");
    const bytes = encodeInputs({ path: "/x", argv: ["/x"], env: [], workdir: "/", uid: 1, gid: 1 }, scenario);
    writeFileSync(f, bytes);
    const lines = execFileSync(exe, ["inputs", f]).toString().split("\n");
    assert.deepEqual(
      lines.filter((l) => l.startsWith("hold=")),
      [`hold=${HOLD.step} stream=0 after=1 pat=`, `hold=${HOLD.output} stream=2 after=0 pat=go on`],
    );
    // a hold after step 2 of a two-step scenario: the host never writes one (the spec parser refuses it), the agent refuses it too
    const bad = Buffer.from(bytes);
    // from the end: "go on" 5, b's pattern length 4, step 4, stream 1, kind 1, a's pattern length 4: a's step field
    const aStep = bytes.length - 5 - 4 - 4 - 1 - 1 - 4 - 4;
    assert.equal(bytes.readUInt32LE(aStep), 1, "control: the field holds step 1");
    bad.writeUInt32LE(2, aStep);
    writeFileSync(f, bad);
    assert.equal(execFileSync(exe, ["inputs", f]).toString(), "refused\n");
    // a branch's tail: the steps alone, exactly as the inputs encode them
    const tail = parseScenario({ steps: [{ action: "start" }, { action: "write-stdin", data: "more", after: { output: "stdout", contains: "?" } }] }).steps;
    const body = encodeSteps(tail);
    assert.deepEqual(execFileSync(exe, ["tail"], { input: body }).toString().trim().split("\n"), [
      "step=1 trig=0 arg=0 pat= off=0 data=",
      "step=2 trig=2 arg=1 pat=? off=0 data=more",
    ]);
    assert.equal(execFileSync(exe, ["tail"], { input: body.subarray(0, body.length - 1) }).toString(), "refused\n");
    assert.equal(execFileSync(exe, ["tail"], { input: Buffer.concat([body, Buffer.of(0)]) }).toString(), "refused\n");
  });

  it("reads the network steps (issue 14) with the action numbers of wire.ts", () => {
    const act: Record<string, string> = {
      start: "ACT_START",
      "write-stdin": "ACT_WRITE",
      "close-stdin": "ACT_CLOSE",
      terminate: "ACT_TERMINATE",
      "network-down": "ACT_NET_DOWN",
      "network-up": "ACT_NET_UP",
    };
    for (const [k, v] of Object.entries(ACTION)) assert.equal(enumValue(act[k]!), v, k);
    const scenario = parseScenario({
      network: { echo: { port: 7 } },
      steps: [{ action: "network-down" }, { action: "start" }, { action: "network-up", after: { output: "stdout", contains: "x" } }],
    });
    const f = join(mkdtempSync(join(tmpdir(), "cairn-inputs-")), "inputs");
    writeFileSync(f, encodeInputs({ path: "/x", argv: ["/x"], env: [], workdir: "/", uid: 1, gid: 1 }, scenario));
    assert.deepEqual(
      execFileSync(exe, ["inputs", f])
        .toString()
        .split("\n")
        .filter((l) => l.startsWith("step=")),
      [
        `step=${ACTION["network-down"]} trig=0 arg=0 pat= off=0 data=`,
        "step=1 trig=0 arg=0 pat= off=0 data=",
        `step=${ACTION["network-up"]} trig=2 arg=1 pat=x off=0 data=`,
      ],
    );
  });

  it("checks a directory against the tree manifest: every path, type, mode, owner, size, target, nothing extra; contents when asked", () => {
    const uid = process.getuid?.() ?? 0;
    const gid = process.getgid?.() ?? 0;
    const root = mkdtempSync(join(tmpdir(), "cairn-tree-"));
    const t = join(root, "t");
    mkdirSync(join(t, "bin"), { recursive: true });
    writeFileSync(join(t, "bin", "x"), "hello\n");
    symlinkSync("bin/x", join(t, "l"));
    chmodSync(t, 0o755);
    chmodSync(join(t, "bin"), 0o750);
    chmodSync(join(t, "bin", "x"), 0o644);
    const x = Buffer.from("hello\n");
    const tree = (edit: (e: FsEntry) => FsEntry = (e) => e): Map<string, FsEntry> =>
      new Map(
        (
          [
            { type: "dir", path: "/", mode: 0o755, uid, gid, mtime: 0 },
            { type: "dir", path: "/bin", mode: 0o750, uid, gid, mtime: 0 },
            { type: "file", path: "/bin/x", mode: 0o644, uid, gid, mtime: 0, size: x.length, sha256: sha256(x) },
            { type: "symlink", path: "/l", mode: 0o777, uid, gid, mtime: 0, target: "bin/x" },
          ] as FsEntry[]
        )
          .map(edit)
          .map((e) => [e.path, e]),
      );
    const m = join(root, "manifest");
    const check = (tr: Map<string, FsEntry>, how: "metadata" | "content" = "metadata"): string => {
      writeFileSync(m, treeManifestBytes(encodeTreeManifest(tr, how)));
      return execFileSync(exe, ["tree", m, t]).toString().trim();
    };
    // controls: the directory as it is passes, with and without contents
    assert.equal(check(tree()), "ok 0");
    assert.equal(check(tree(), "content"), "ok 0");
    // one mode bit, one owner, one size, one symlink target: the entry's index (path byte order: /, /bin, /bin/x, /l)
    assert.equal(check(tree((e) => (e.path === "/bin" ? { ...e, mode: 0o755 } : e))), "differs 1");
    assert.equal(check(tree((e) => (e.path === "/bin/x" ? { ...e, uid: uid + 1 } : e))), "differs 2");
    assert.equal(check(tree((e) => (e.path === "/bin/x" && e.type === "file" ? { ...e, size: 7 } : e))), "differs 2");
    assert.equal(check(tree((e) => (e.path === "/l" && e.type === "symlink" ? { ...e, target: "bin/y" } : e))), "differs 3");
    assert.equal(check(tree((e) => (e.path === "/l" ? { type: "dir", path: "/l", mode: 0o777, uid, gid, mtime: 0 } : e))), "differs 3");
    // same size, other bytes: only the content check sees it
    const y = Buffer.from("HELLO\n");
    const other = tree((e) => (e.path === "/bin/x" && e.type === "file" ? { ...e, sha256: sha256(y) } : e));
    assert.equal(check(other), "ok 0");
    assert.equal(check(other, "content"), "differs 2");
    // a missing entry, an extra entry
    const missing = tree();
    missing.set("/zz", { type: "file", path: "/zz", mode: 0o644, uid, gid, mtime: 0, size: 0, sha256: sha256(Buffer.alloc(0)) } as FsEntry);
    assert.equal(check(missing), "differs 4");
    writeFileSync(join(t, "extra"), "");
    assert.equal(check(tree()), "differs 4");
    // a truncated manifest is refused, not half-checked
    writeFileSync(m, treeManifestBytes(encodeTreeManifest(tree())).subarray(0, 40));
    assert.equal(execFileSync(exe, ["tree", m, t]).toString().trim(), "malformed 0");
  });

  it("builds reproducibly: two builds in different directories are byte-identical", () => {
    const a = buildAgent();
    const b = buildAgent();
    assert.equal(a.digest, b.digest);
    assert.equal(a.bytes.subarray(0, 4).toString("latin1"), "\x7fELF");
  });
});
