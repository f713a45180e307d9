import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCli } from "../helpers/cli.ts";
import { GCC_SKIP } from "./fixtures/static-program.ts";
import { binarySpec, binaryWorkspace, objectPath, ociWorkspace, rawDigest } from "./fixtures/workspace.ts";

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
