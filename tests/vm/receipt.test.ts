/**
 * Signed run receipts: `cairn run --sign` writes an in-toto Statement v1 in
 * DSSE; `cairn receipt verify --run` passes on the run it describes and names
 * the first differing field on a tampered copy; another key, an edited
 * payload, another predicate type and another run are refused. Each refusal
 * runs on a copy of a run directory that verifies (the control).
 */
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { generateSigningKey, signEnvelope, writeKeyPair } from "../../src/core/index.ts";
import { guestInstructions } from "../../src/vm/replay-log.ts";
import { firstDifference } from "../../src/vm/run-receipt.ts";
import { runCli } from "../helpers/cli.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { buildProgram, GCC_SKIP } from "../workload/fixtures/static-program.ts";
import { TEST_KIT_DIR, testKit, VM_SKIP } from "./fixtures/kit.ts";

interface Refusal {
  code: string;
  path: string;
}

describe("firstDifference (what receipt verify --run compares)", () => {
  it("names a key only the receipt has, at any depth (control: equal models have no difference)", () => {
    const run = { a: 1, p: { b: [1, { c: 2 }] } };
    assert.equal(firstDifference(run, structuredClone(run)), undefined);
    assert.equal(firstDifference(run, { ...run, extra: null }), "/extra");
    assert.equal(firstDifference(run, { a: 1, p: { b: [1, { c: 2, d: 3 }] } }), "/p/b/1/d");
    assert.equal(firstDifference(run, { a: 1, p: { b: [1, { c: 2 }], "x/y": 0 } }), "/p/x~1y");
    // and one only the run has
    assert.equal(firstDifference(run, { p: run.p }), "/a");
  });
});

describe("run receipts", { skip: VM_SKIP || GCC_SKIP }, () => {
  it("sign at run time, verify against the run, refuse tampering, other keys, other runs", async () => {
    await testKit();
    const dir = mkdtempSync(join(tmpdir(), "cairn-receipt-"));
    cpSync(join(PROJECT_ROOT, "examples", "workload", "hello.yaml"), join(dir, "hello.yaml"));
    cpSync(buildProgram("static"), join(dir, "hello"));
    const me = writeKeyPair(join(dir, "me"), generateSigningKey(), false);
    const other = writeKeyPair(join(dir, "other"), generateSigningKey(), false);
    const env = { ...process.env, CAIRN_HOME: join(dir, "home"), CAIRN_KIT: TEST_KIT_DIR };
    const run = async (): Promise<string> => {
      const r = await runCli(["run", join(dir, "hello.yaml"), "--sign", me.keyPath, "--json"], env);
      assert.equal(r.code, 0, r.stderr);
      return (JSON.parse(r.stdout) as { run_dir: string }).run_dir;
    };
    const a = await run();
    const receipt = join(a, "receipt.dsse.json");
    const verify = async (file: string, pub: string, runDir?: string): Promise<Refusal | "ok"> => {
      const r = await runCli(["receipt", "verify", file, "--pub", pub, ...(runDir ? ["--run", runDir] : []), "--json"], env);
      if (r.code === 0) return "ok";
      const e = (JSON.parse(r.stdout) as { error: Refusal }).error;
      return { code: e.code, path: e.path };
    };
    // controls
    assert.equal(await verify(receipt, me.pubPath, a), "ok");
    assert.equal(await verify(receipt, me.pubPath), "ok");
    const statement = JSON.parse(Buffer.from((JSON.parse(readFileSync(receipt, "utf8")) as { payload: string }).payload, "base64").toString("utf8"));
    assert.equal(statement._type, "https://in-toto.io/Statement/v1");
    assert.equal(statement.predicateType, "https://cairn.dev/run/v1");
    const manifest = JSON.parse(readFileSync(join(a, "run.json"), "utf8"));
    assert.equal(`sha256:${statement.subject[0].digest.sha256}`, manifest.outcome);
    assert.equal(statement.predicate.cost.deterministic.guest_image_bytes, manifest.guest_image.size);
    const stdout = readFileSync(join(a, "streams", "1.stdout"));
    assert.equal(statement.predicate.cost.deterministic.output_bytes.stdout, stdout.length);
    assert.equal(typeof statement.predicate.cost.non_deterministic.wall_ms, "number");
    // QEMU's host CPU time, from the reaped child's cutime + cstime: a TCG boot costs far more than 100 ms of CPU
    const cpu = statement.predicate.cost.non_deterministic.host_cpu_ms;
    assert.ok(Number.isSafeInteger(cpu) && cpu > 100, `host_cpu_ms is ${cpu}`);
    // the instruction records of this record's log: a kernel boot is far more than a million instructions
    assert.equal(statement.predicate.cost.deterministic.guest_instructions, guestInstructions(readFileSync(join(a, "replay.log"))));
    assert.ok(statement.predicate.cost.deterministic.guest_instructions > 1_000_000);
    // signing afterwards gives the same envelope (Ed25519 is deterministic; the statement is the directory's)
    const again = join(dir, "again.dsse.json");
    assert.equal((await runCli(["receipt", "sign", a, "--key", me.keyPath, "--out", again], env)).code, 0);
    assert.ok(readFileSync(again).equals(readFileSync(receipt)));

    // another key
    assert.deepEqual(await verify(receipt, other.pubPath, a), { code: "SIGNATURE_INVALID", path: "/signatures" });
    // tampered run directory copies
    const copy = (edit: (d: string) => void): string => {
      const d = mkdtempSync(join(tmpdir(), "cairn-receipt-copy-"));
      cpSync(a, d, { recursive: true });
      edit(d);
      return d;
    };
    const events = copy((d) => writeFileSync(join(d, "events.json"), readFileSync(join(d, "events.json"), "utf8").replace('"code": 0', '"code": 1')));
    assert.deepEqual(await verify(receipt, me.pubPath, events), { code: "RECEIPT_MISMATCH", path: "/predicate/events/sha256" });
    const log = copy((d) => {
      const b = readFileSync(join(d, "replay.log"));
      b[b.length - 1]! ^= 1;
      writeFileSync(join(d, "replay.log"), b);
    });
    assert.deepEqual(await verify(receipt, me.pubPath, log), { code: "RECEIPT_MISMATCH", path: "/predicate/replay_log/sha256" });
    // an edited payload under the old signature
    const forged = join(dir, "forged.dsse.json");
    const envl = JSON.parse(readFileSync(receipt, "utf8")) as { payload: string };
    envl.payload = Buffer.from(JSON.stringify({ ...statement, predicate: { ...statement.predicate, status: "passed!" } })).toString("base64");
    writeFileSync(forged, JSON.stringify(envl));
    assert.equal(((await verify(forged, me.pubPath)) as Refusal).code, "SIGNATURE_INVALID");
    // a statement of something else, signed with the right key
    const alien = join(dir, "alien.dsse.json");
    const { readSigningKey } = await import("../../src/core/index.ts");
    const payload = Buffer.from(JSON.stringify({ ...statement, predicateType: "https://slsa.dev/provenance/v1" }));
    writeFileSync(alien, JSON.stringify(signEnvelope("application/vnd.in-toto+json", payload, [readSigningKey(me.keyPath)])));
    assert.equal(((await verify(alien, me.pubPath)) as Refusal).code, "RECEIPT_INVALID");
    // issue 31 case 19: a receipt signed with the right key that says more than the run (a key only it has) is refused at that key
    const more = (extra: Record<string, unknown>, top: Record<string, unknown> = {}): string => {
      const file = join(dir, `more-${Object.keys({ ...extra, ...top })[0]}.dsse.json`);
      const body = Buffer.from(JSON.stringify({ ...statement, ...top, predicate: { ...statement.predicate, ...extra } }));
      writeFileSync(file, JSON.stringify(signEnvelope("application/vnd.in-toto+json", body, [readSigningKey(me.keyPath)])));
      return file;
    };
    assert.deepEqual(await verify(more({ reviewed_by: "the lead" }), me.pubPath, a), { code: "RECEIPT_MISMATCH", path: "/predicate/reviewed_by" });
    assert.deepEqual(await verify(more({}, { note: "verified" }), me.pubPath, a), { code: "RECEIPT_MISMATCH", path: "/note" });
    assert.deepEqual(await verify(more({ vm: { ...statement.predicate.vm, kvm: true } }), me.pubPath, a), {
      code: "RECEIPT_MISMATCH",
      path: "/predicate/vm/kvm",
    });
    // control: the same statement re-signed without the extra key verifies
    assert.equal(await verify(more({}), me.pubPath, a), "ok");
    // another run of the same workload: same outcome, another run
    const b = await run();
    assert.deepEqual(await verify(receipt, me.pubPath, b), { code: "RECEIPT_MISMATCH", path: "/predicate/run_id" });
    assert.equal(await verify(join(b, "receipt.dsse.json"), me.pubPath, b), "ok");
  });
});
