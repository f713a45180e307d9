import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCli, runCliOnTerminal } from "../helpers/cli.ts";
import { GCC_SKIP } from "./fixtures/static-program.ts";
import { binarySpec, binaryWorkspace, helloImage, objectPath, ociWorkspace, rawDigest } from "./fixtures/workspace.ts";

const opts = { skip: GCC_SKIP };

test("workload assemble → show → verify, human and --json", opts, async () => {
  const ws = binaryWorkspace();
  const a = await runCli(["workload", "assemble", ws.specPath, "--store", ws.storeDir, "--json"]);
  assert.equal(a.code, 0, a.stdout + a.stderr);
  const out = JSON.parse(a.stdout) as { source_kind: string; workload: string; lock: string; sizes: { files: number }; duration_ms: number };
  assert.equal(out.source_kind, "binary");
  assert.equal(out.lock, ws.lockPath, "default lock path is <spec name>.lock.json beside the spec");
  assert.equal(out.sizes.files, 1);
  const show = await runCli(["workload", "show", ws.lockPath, "--json"]);
  assert.equal(show.code, 0);
  assert.equal((JSON.parse(show.stdout) as { workload: string }).workload, out.workload);
  const human = await runCli(["workload", "verify", ws.lockPath, "--store", ws.storeDir]);
  assert.equal(human.code, 0);
  assert.match(human.stdout, new RegExp(`verified binary workload ${out.workload}`));
  assert.ok(!human.stdout.includes("s3cret") && !show.stdout.includes("s3cret"), "env values are never printed");
});

test("the store defaults to $CAIRN_HOME/store; --lock-out overrides the lock path", opts, async () => {
  const ws = binaryWorkspace();
  const env = { ...process.env, CAIRN_HOME: join(ws.dir, "home") };
  const lock = join(ws.dir, "custom.lock.json");
  assert.equal((await runCli(["workload", "assemble", ws.specPath, "--lock-out", lock], env)).code, 0);
  assert.equal((await runCli(["workload", "verify", lock], env)).code, 0);
  // control: another store does not have it
  const other = await runCli(["workload", "verify", lock, "--store", join(ws.dir, "empty"), "--json"], env);
  assert.equal(other.code, 1);
  assert.equal((JSON.parse(other.stdout) as { error: { code: string } }).error.code, "STORE_MISSING");
});

test("verify failures exit 1 with a JSON error naming the code and path", opts, async () => {
  const ws = ociWorkspace();
  assert.equal((await runCli(["workload", "assemble", ws.specPath, "--store", ws.storeDir])).code, 0);
  writeFileSync(objectPath(ws, rawDigest(ws, "config")), "{}");
  const r = await runCli(["workload", "verify", ws.lockPath, "--store", ws.storeDir, "--json"]);
  assert.equal(r.code, 1);
  const err = (JSON.parse(r.stdout) as { error: { code: string; path: string; hint: string } }).error;
  assert.equal(err.code, "STORE_CORRUPT");
  assert.ok(err.hint.length > 0);
});

test(
  "verify says which path ran: under the assembly's memo, then --full writes a verify memo, a bad memo re-derives with the reason; --no-memo writes none",
  opts,
  async () => {
    const ws = ociWorkspace();
    const keys = join(ws.dir, "keys");
    type Out = { derivation: string; memo_written?: boolean; memo_not_used?: string; memo_of?: string; pack_body?: string; tree?: string; workload: string };
    const assembled = await runCli(["workload", "assemble", ws.specPath, "--store", ws.storeDir, "--keys", keys, "--json"]);
    assert.equal(assembled.code, 0, assembled.stdout + assembled.stderr);
    assert.equal((JSON.parse(assembled.stdout) as { memo_written?: boolean }).memo_written, true);
    assert.equal(statSync(join(keys, "verify-memo.key")).mode & 0o777, 0o600, "the key is created where --keys says, owner-only");
    const verify = async (...extra: string[]): Promise<Out> => {
      const r = await runCli(["workload", "verify", ws.lockPath, "--store", ws.storeDir, "--keys", keys, "--json", ...extra]);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      return JSON.parse(r.stdout) as Out;
    };
    const first = await verify();
    assert.equal(first.derivation, "memo");
    assert.equal(first.memo_of, "assemble");
    assert.equal(first.pack_body, "unchanged");
    assert.equal(first.tree, "hashed only");
    const full = await verify("--full");
    assert.equal(full.derivation, "re-derived");
    assert.equal(full.memo_written, true);
    assert.match(full.memo_not_used ?? "", /--full/);
    assert.equal(full.workload, first.workload);
    const again = await verify();
    assert.equal(again.derivation, "memo");
    assert.equal(again.memo_of, "verify");
    const memos = join(ws.storeDir, "verified", "sha256");
    for (const m of readdirSync(memos)) writeFileSync(join(memos, m), "{}");
    const bad = await verify();
    assert.equal(bad.derivation, "re-derived");
    assert.match(bad.memo_not_used ?? "", /MAC/);
    const human = await runCli(["workload", "verify", ws.lockPath, "--store", ws.storeDir, "--keys", keys]);
    assert.match(human.stdout, /derived entry hashed, .* under this machine's memo of the full verify at .*: the tree was not derived again/);
    const fullHuman = await runCli(["workload", "verify", ws.lockPath, "--store", ws.storeDir, "--keys", keys, "--full"]);
    assert.match(fullHuman.stdout, /re-derived in \d+ ms \(--full asked for a re-derivation\); memo written/);
    // --no-memo: the assembly writes none, and the first verify re-derives and says so
    const other = ociWorkspace();
    const plain = await runCli(["workload", "assemble", other.specPath, "--store", other.storeDir, "--keys", keys, "--no-memo"]);
    assert.equal(plain.code, 0, plain.stderr);
    assert.doesNotMatch(plain.stdout, /^memo/m);
    const r = await runCli(["workload", "verify", other.lockPath, "--store", other.storeDir, "--keys", keys, "--json"]);
    const o = JSON.parse(r.stdout) as Out;
    assert.equal(o.derivation, "re-derived");
    assert.equal(o.memo_not_used, "no memo for this lock");
    assert.equal(o.memo_written, true);
    const humanAssemble = await runCli(["workload", "assemble", ws.specPath, "--store", join(ws.dir, "store-2"), "--keys", keys]);
    assert.match(humanAssemble.stdout, /^memo +written: the first verify of this lock on this machine hashes its raw closure/m);
  },
);

test("assemble refusals: a bad spec exits 1, a missing argument exits 2", opts, async () => {
  const ws = binaryWorkspace(binarySpec({ user: "root" }));
  const r = await runCli(["workload", "assemble", ws.specPath, "--store", ws.storeDir, "--json"]);
  assert.equal(r.code, 1);
  assert.equal((JSON.parse(r.stdout) as { error: { code: string } }).error.code, "LAUNCH_INVALID");
  assert.equal((await runCli(["workload", "assemble"])).code, 2);
  const help = await runCli(["workload", "assemble", "--help"]);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /--lock-out/);
});

test("workload show --tree verifies first and lists the tree; env values are not shown", opts, async () => {
  const ws = binaryWorkspace();
  assert.equal((await runCli(["workload", "assemble", ws.specPath, "--store", ws.storeDir])).code, 0);
  const human = await runCli(["workload", "show", ws.lockPath, "--tree", "--store", ws.storeDir]);
  assert.equal(human.code, 0, human.stderr);
  assert.match(human.stdout, /-rwxr-xr-x 1000:1000 +\d+ +0 \/bin\/app/);
  const json = JSON.parse((await runCli(["workload", "show", ws.lockPath, "--tree", "--store", ws.storeDir, "--json"])).stdout) as {
    verified: boolean;
    tree: Array<{ path: string }>;
    launch: { env_names: string[] };
  };
  assert.equal(json.verified, true);
  assert.deepEqual(
    json.tree.map((e) => e.path),
    ["/", "/bin", "/bin/app", "/home", "/home/app"],
  );
  assert.deepEqual(json.launch.env_names, ["GREETING"]);
  assert.ok(!human.stdout.includes("s3cret"));
  // control: --tree refuses a damaged store, plain show does not look at it
  writeFileSync(objectPath(ws, rawDigest(ws, "executable")), "x");
  assert.equal((await runCli(["workload", "show", ws.lockPath, "--tree", "--store", ws.storeDir])).code, 1);
  assert.equal((await runCli(["workload", "show", ws.lockPath])).code, 0);
});

test(
  "workload check: exit 1 with every problem and the usual error object under --json; exit 0 on a clean image; assemble lists what a policy left out",
  opts,
  async () => {
    const image = helloImage({ platform: null, layers: [...helloImage().layers, { entries: [{ name: "dev/null", type: "char", devmajor: 1, devminor: 3 }] }] });
    const ws = ociWorkspace(image);
    const r = await runCli(["workload", "check", ws.specPath, "--json"]);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const out = JSON.parse(r.stdout) as {
      error: { code: string; path: string };
      problem_count: number;
      suggested_policy: Record<string, string>;
      admissible: boolean;
    };
    assert.deepEqual([out.error.code, out.error.path, out.problem_count, out.admissible], ["OCI_PLATFORM", "/manifests/0/platform", 2, true]);
    assert.deepEqual(out.suggested_policy, { platform: "config", devices: "skip" });
    const human = await runCli(["workload", "check", ws.specPath]);
    assert.equal(human.code, 1);
    assert.match(human.stdout, /admitted by policy devices: skip/);
    // control: with the suggested policy check finds nothing and assemble lists the device it left out
    const ok = ociWorkspace(image, { policy: out.suggested_policy });
    const clean = await runCli(["workload", "check", ok.specPath, "--json"]);
    assert.equal(clean.code, 0, clean.stdout);
    assert.equal((JSON.parse(clean.stdout) as { error?: unknown }).error, undefined);
    const a = await runCli(["workload", "assemble", ok.specPath, "--store", ok.storeDir]);
    assert.equal(a.code, 0, a.stdout + a.stderr);
    assert.match(a.stdout, /left out {2}1 device node\(s\) and FIFO\(s\) \(policy devices: skip\):\n {2}\/layers\/1:\/dev\/null chardev 1:3/);
    const show = await runCli(["workload", "show", ok.lockPath]);
    assert.match(show.stdout, /policy {4}cairn\.policy\/1 hardlinks=refuse setid=refuse devices=skip platform=config/);
  },
);

test("workload verify on a terminal draws apply layers while it re-derives (--full), and nothing when the memo holds", opts, async () => {
  const ws = ociWorkspace();
  const keys = join(ws.dir, "keys");
  assert.equal((await runCli(["workload", "assemble", ws.specPath, "--store", ws.storeDir, "--keys", keys, "--json"])).code, 0);
  const full = await runCliOnTerminal(["workload", "verify", ws.lockPath, "--store", ws.storeDir, "--keys", keys, "--full", "--json"]);
  assert.equal(full.code, 0, full.stderr);
  assert.ok(full.frames.length >= 1 && full.frames.every((f) => f.startsWith("apply layers [")), JSON.stringify(full.frames));
  assert.match(full.frames.at(-1)!, /100% (\S+ \S+)\/\1$/, "the last frame: every compressed byte read");
  const memo = await runCliOnTerminal(["workload", "verify", ws.lockPath, "--store", ws.storeDir, "--keys", keys, "--json"]);
  assert.equal(memo.code, 0, memo.stderr);
  assert.equal((JSON.parse(memo.stdout) as { derivation: string }).derivation, "memo");
  assert.deepEqual(memo.frames, [], "a memo that holds applies no layer");
});
