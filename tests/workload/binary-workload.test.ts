import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { assembleWorkload, openVerifiedWorkload, BINARY_INSTALL_PATH } from "../../src/workload/index.ts";
import { assertCodeAsync } from "../helpers/errors.ts";
import { GCC_SKIP, programBytes } from "./fixtures/static-program.ts";
import { assemble, binarySpec, binaryWorkspace, objectPath, rawDigest, readLockJson, rewriteLock } from "./fixtures/workspace.ts";

const opts = { skip: GCC_SKIP };

test("a binary spec assembles, verifies, and hands out only verified data", opts, async () => {
  const ws = binaryWorkspace();
  const r = await assemble(ws);
  assert.equal(r.kind, "binary");
  assert.equal(statSync(ws.lockPath).mode & 0o777, 0o600);
  const w = await openVerifiedWorkload(ws.lockPath, ws.storeDir);
  assert.equal(w.identities.workload, r.identities.workload);
  assert.deepEqual(w.launch.argv, [BINARY_INSTALL_PATH, "world"]);
  assert.deepEqual(w.launch.env, ["GREETING=s3cret-greeting"]);
  assert.equal(w.launch.workdir, "/home/app");
  assert.deepEqual([w.launch.uid, w.launch.gid], [1000, 1000]);
  const app = w.tree.get(BINARY_INSTALL_PATH);
  assert.ok(app?.type === "file");
  assert.deepEqual([app.mode, app.uid, app.gid, app.mtime], [0o755, 1000, 1000, 0]);
  assert.deepEqual([...w.tree.keys()].sort(), ["/", "/bin", "/bin/app", "/home", "/home/app"]);
  assert.equal(w.tree.get("/home/app")?.uid, 1000);
  assert.equal(w.tree.get("/home")?.uid, 0);
  assert.ok(Buffer.from(await w.content.get(app.sha256)).equals(programBytes("static")));
});

test("identities do not depend on locators, the lock path, the store or the clock", opts, async () => {
  const a = binaryWorkspace();
  const b = binaryWorkspace(binarySpec({ path: "sub/../hello" }));
  const ra = await assemble(a);
  const rb = await assemble(b);
  assert.equal(ra.identities.workload, rb.identities.workload);
  assert.equal(ra.derivedDigest, rb.derivedDigest);
  // control: a launch change is a different workload
  const c = binaryWorkspace(binarySpec({ args: ["other"] }));
  assert.notEqual((await assemble(c)).identities.workload, ra.identities.workload);
});

test("a spec over specBytes and a lock over lockBytes are refused naming the limit", opts, async () => {
  const big = binaryWorkspace(binarySpec({ args: ["x".repeat(1024 * 1024)] }));
  const e = await assertCodeAsync(() => assemble(big), "SOURCE_OVERSIZED");
  assert.match(e.message, /specBytes/);
  const ws = binaryWorkspace();
  await assemble(ws);
  writeFileSync(ws.lockPath, " ".repeat(4 * 1024 * 1024 + 1));
  const l = await assertCodeAsync(() => openVerifiedWorkload(ws.lockPath, ws.storeDir), "WORKLOAD_LOCK_INVALID");
  assert.match(l.message, /lockBytes/);
});

test("refusals surface from assemble: static PIE, dynamic, root user, symlinked executable", opts, async () => {
  const pie = binaryWorkspace();
  writeFileSync(join(pie.dir, "hello"), programBytes("static-pie"));
  await assertCodeAsync(() => assemble(pie), "ELF_STATIC_PIE");
  const dyn = binaryWorkspace();
  writeFileSync(join(dyn.dir, "hello"), programBytes("dynamic"));
  await assertCodeAsync(() => assemble(dyn), "ELF_DYNAMIC");
  await assertCodeAsync(() => assemble(binaryWorkspace(binarySpec({ user: "0:0" }))), "LAUNCH_INVALID");
  await assertCodeAsync(() => assemble(binaryWorkspace(binarySpec({ env: { "A=B": "c" } }))), "LAUNCH_INVALID");
  await assertCodeAsync(() => assemble(binaryWorkspace(binarySpec({ workdir: "/bin/app/x" }))), "LAUNCH_INVALID");
  await assertCodeAsync(() => assemble(binaryWorkspace(binarySpec({ workdir: "/bin/app" }))), "LAUNCH_INVALID");
  // a device: a spec may not name /dev/zero at all (outside its directory); named under --inputs-root /dev, it is not a regular file
  const dev = binaryWorkspace(binarySpec({ path: "/dev/zero" }));
  await assertCodeAsync(() => assemble(dev), "PATH_UNSAFE", "/source/binary/path");
  await assertCodeAsync(
    () => assembleWorkload({ specPath: dev.specPath, storeDir: dev.storeDir, lockOut: dev.lockPath, cairnVersion: "test", hostRoot: "/dev" }),
    "SOURCE_NOT_REGULAR",
  );
});

// The tamper matrix for binary workloads: with the lock fixed, each change must fail verify.
async function tampered(edit: (ws: ReturnType<typeof binaryWorkspace>) => void | Promise<void>, code: Parameters<typeof assertCodeAsync>[1]) {
  const ws = binaryWorkspace();
  await assemble(ws);
  await openVerifiedWorkload(ws.lockPath, ws.storeDir); // control: verifies before the edit
  await edit(ws);
  return assertCodeAsync(() => openVerifiedWorkload(ws.lockPath, ws.storeDir), code);
}

/** Assembles a variant spec into the same store and returns its canonical spec digest (the variant's bytes are now stored). */
async function variantSpec(ws: ReturnType<typeof binaryWorkspace>, spec: string): Promise<string> {
  const path = join(ws.dir, "variant.json");
  writeFileSync(path, spec);
  await assemble(ws, path, join(ws.dir, "variant.lock.json"));
  const lock = JSON.parse(readFileSync(join(ws.dir, "variant.lock.json"), "utf8")) as { raw: Array<{ role: string; digest: string; size: number }> };
  return JSON.stringify(lock.raw[0]);
}

test("tamper: stored spec bytes", opts, async () => {
  await tampered((ws) => writeFileSync(objectPath(ws, rawDigest(ws, "spec")), binarySpec({ args: ["evil"] })), "STORE_CORRUPT");
});

test("tamper: stored executable bytes (same size)", opts, async () => {
  await tampered((ws) => {
    const p = objectPath(ws, rawDigest(ws, "executable"));
    const b = readFileSync(p);
    b.writeUInt8(b.readUInt8(b.length - 1) ^ 0xff, b.length - 1);
    writeFileSync(p, b);
  }, "STORE_CORRUPT");
});

test("tamper: stored derived entry (normalized tree)", opts, async () => {
  await tampered((ws) => {
    const d = (readLockJson(ws).derived as { digest: string }).digest;
    const p = objectPath(ws, d, "derived");
    writeFileSync(p, readFileSync(p, "utf8").replace('"mode":493', '"mode":511'));
  }, "STORE_CORRUPT");
});

for (const [field, spec] of [
  ["args", binarySpec({ args: ["evil"] })],
  ["env", binarySpec({ env: { GREETING: "other-secret" } })],
  ["workdir", binarySpec({ workdir: "/tmp" })],
  ["credentials", binarySpec({ user: "1001:1000" })],
] as const) {
  test(`tamper: ${field} — the stored spec swapped for a variant, the lock re-pointed and re-digested`, opts, async () => {
    const e = await tampered(async (ws) => {
      const ref = JSON.parse(await variantSpec(ws, spec)) as { digest: string; size: number };
      rewriteLock(ws, (lock) => {
        (lock.raw as Array<{ digest: string; size: number }>)[0] = { role: "spec", digest: ref.digest, size: ref.size } as never;
      });
    }, "WORKLOAD_MISMATCH");
    assert.ok(e.path === "/identities/launch" || e.path === "/identities/fs", `first incompatible field: ${e.path}`);
    assert.ok(!e.message.includes("secret"), "a refusal never prints an env value");
  });
  test(`tamper: ${field} — the stored spec object overwritten in place`, opts, async () => {
    await tampered((ws) => writeFileSync(objectPath(ws, rawDigest(ws, "spec")), spec), "STORE_CORRUPT");
  });
}

test("tamper: missing raw executable fails even though the derived entry exists", opts, async () => {
  const e = await tampered((ws) => rmSync(objectPath(ws, rawDigest(ws, "executable"))), "STORE_MISSING");
  assert.equal(e.path, "/raw/1", "the refusal names the lock field");
});

test("tamper: missing derived entry", opts, async () => {
  await tampered((ws) => rmSync(objectPath(ws, (readLockJson(ws).derived as { digest: string }).digest, "derived")), "STORE_MISSING");
});

test("tamper: lock edited without its digest, and a lock whose recorded identity was edited consistently", opts, async () => {
  await tampered(
    (ws) => writeFileSync(ws.lockPath, readFileSync(ws.lockPath, "utf8").replace('"hardlinks": "refuse"', '"hardlinks": "copy"')),
    "WORKLOAD_LOCK_INVALID",
  );
  const e = await tampered((ws) => rewriteLock(ws, (l) => void ((l.identities as { fs: string }).fs = `sha256:${"0".repeat(64)}`)), "WORKLOAD_MISMATCH");
  assert.equal(e.path, "/identities/fs");
});
