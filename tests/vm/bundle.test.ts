/**
 * Replay bundles, the "done when" of issue 10 as a new user would do it:
 * resolve the example profile (plus a layer holding a static program),
 * export it, run a command in it with a signed receipt, bundle the run, delete
 * the original home, and replay the bundle from a fresh CAIRN_HOME in another
 * directory: "matches the record"; the receipt verifies against the imported
 * run and fails on a tampered copy. Then hostile bundles, each refused before
 * anything is imported (the fresh home stays empty), each beside the
 * unmodified bundle, which opens (the control).
 */
import assert from "node:assert/strict";
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { buildExampleRegistry, toySpec } from "../../examples/strata/build-registry.ts";
import { sha256, type ErrorCode } from "../../src/core/index.ts";
import { buildLayerFromDirectory, LocalRegistry } from "../../src/strata/index.ts";
import { writeTar, type TarEntry } from "../../src/tree/index.ts";
import { importBundle, loadKit, openBundle, parseVmIdentity, vmDigest } from "../../src/vm/index.ts";
import { KIT_MODULES } from "../../src/vm/kernel.ts";
import { agentSourceDigest } from "../../src/vm/kit.ts";
import { runCli } from "../helpers/cli.ts";
import { assertCodeAsync } from "../helpers/errors.ts";
import { checkDocument } from "../helpers/json-schemas.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { GCC_SKIP } from "../workload/fixtures/static-program.ts";
import { staticFixture } from "./fixtures/programs.ts";
import { TEST_KIT_DIR, testKit, VM_SKIP } from "./fixtures/kit.ts";

/** The bundle's members as tar entries again, edited, written by cairn's own tar writer. */
function rebuild(members: ReadonlyMap<string, Uint8Array>, edit: (files: Map<string, Uint8Array>, extra: TarEntry[]) => void, reindex = true): Buffer {
  const files = new Map(members);
  const extra: TarEntry[] = [];
  edit(files, extra);
  const index = JSON.parse(Buffer.from(files.get("cairn-bundle.json")!).toString("utf8")) as { members: Array<{ path: string; sha256: string; size: number }> };
  if (reindex) {
    index.members = [...files.keys()]
      .filter((p) => p !== "cairn-bundle.json")
      .sort()
      .map((p) => ({ path: p, sha256: sha256(files.get(p)!), size: files.get(p)!.length }));
    files.set("cairn-bundle.json", Buffer.from(JSON.stringify(index)));
  }
  const dirs = new Set<string>();
  for (const p of files.keys()) {
    const parts = p.split("/");
    for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join("/"));
  }
  return writeTar([
    ...[...dirs].sort().map((d): TarEntry => ({ type: "dir", path: d, mode: 0o755 })),
    ...[...files].map(([path, data]): TarEntry => ({ type: "file", path, mode: 0o644, data })),
    ...extra,
  ]);
}

/** Every file under `dir` (recursively) whose name is 64 hex digits hashes to its name. */
function checkAddressed(dir: string): number {
  if (!existsSync(dir)) return 0;
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile() || !/^[0-9a-f]{64}$/.test(e.name)) continue;
    assert.equal(sha256(readFileSync(join(e.parentPath, e.name))).slice(7), e.name, `${e.parentPath}/${e.name} is whole`);
    n++;
  }
  return n;
}

/**
 * Imports killed (SIGKILL) at several points leave nothing half-visible: every
 * store and kit object present is whole, a run directory is there complete or
 * not at all, a kit.json names only objects that are there; a later import
 * into the same home completes.
 */
async function interruptedImports(bundle: string, work: string): Promise<void> {
  const { spawn } = await import("node:child_process");
  const code = `const m = await import(${JSON.stringify(join(PROJECT_ROOT, "src/vm/index.ts"))}); const h = process.argv[1]; process.stdout.write("start\\n"); await m.importBundle(${JSON.stringify(bundle)}, { storeDir: h + "/store", kitDir: h + "/kit", runsDir: h + "/runs" }); process.stdout.write("done\\n");`;
  let interrupted = 0;
  for (const [i, delay] of [0, 20, 60, 120, 250].entries()) {
    const home = join(work, `killed-${i}`);
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code, home], {
      cwd: PROJECT_ROOT,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    await new Promise<void>((resolve) => {
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString();
        if (out.includes("start")) setTimeout(() => child.kill("SIGKILL"), delay);
      });
      child.on("exit", () => resolve());
    });
    if (!out.includes("done")) interrupted++;
    checkAddressed(join(home, "store"));
    checkAddressed(join(home, "kit"));
    const runs = join(home, "runs");
    for (const n of existsSync(runs) ? readdirSync(runs).filter((x) => !x.startsWith(".") && x !== "cairn-runs.json") : []) {
      for (const f of ["run.json", "events.json", "assertions.json", "replay.log", "lock.json"]) assert.ok(existsSync(join(runs, n, f)), `${n}/${f}`);
    }
    const kit = loadKit(join(home, "kit"));
    if (kit !== undefined) {
      for (const d of [kit.kernel.digest, ...kit.kernel.modules.map((m) => m.digest)])
        assert.ok(existsSync(join(home, "kit", "kernels", "sha256", d.slice(7))), d);
      assert.ok(existsSync(join(home, "kit", "agents", "sha256", kit.agent.digest.slice(7))));
    }
    // the next import into the same home completes
    const again = await importBundle(bundle, { storeDir: join(home, "store"), kitDir: join(home, "kit"), runsDir: runs });
    assert.ok(existsSync(join(again.runDir, "run.json")));
    assert.deepEqual(
      readdirSync(runs).filter((n) => n.endsWith(".tmp")),
      [],
      "the killed import's staging is removed by the next import",
    );
  }
  assert.ok(interrupted >= 1, "at least one kill landed before the import finished");
}

describe("replay bundles", { skip: VM_SKIP || GCC_SKIP }, () => {
  it("profile → lockfile → export → run → signed receipt → bundle → replay from a fresh home elsewhere; hostile bundles are refused before import", async () => {
    await testKit();
    const work = mkdtempSync(join(tmpdir(), "cairn-pipeline-"));
    const ex = buildExampleRegistry(join(work, "strata"));
    const src = join(work, "hello-layer");
    mkdirSync(join(src, "usr/local/bin"), { recursive: true });
    copyFileSync(staticFixture("lstree"), join(src, "usr/local/bin/lstree"));
    const built = buildLayerFromDirectory(src, toySpec({ name: "lstree", version: "1.0", provides: ["lstree@1.0"], files: {} }));
    LocalRegistry.open(ex.registry).publishLayer(built.blob.blob, built.manifest, [ex.registryKey]);
    const profile = join(work, "profile.yaml");
    writeFileSync(profile, readFileSync(join(PROJECT_ROOT, "examples/strata/profile.yaml"), "utf8").replace("  - numpy\n", "  - numpy\n  - lstree\n"));
    const home = join(work, "home");
    const env = { ...process.env, CAIRN_HOME: home, CAIRN_KIT: TEST_KIT_DIR };
    const lock = join(work, "env.lock");
    const reg = ["--registry", ex.registry, "--base", `rootfs:${ex.rootfs}`];
    const ok = async (args: string[], e: NodeJS.ProcessEnv = env): Promise<string> => {
      const r = await runCli(args, e);
      assert.equal(r.code, 0, `${args.join(" ")}\n${r.stderr}${r.stdout}`);
      return r.stdout;
    };
    await ok(["resolve", profile, ...reg, "--trust", `keyfile://${ex.root}/registry.pub`, "--sign", join(ex.root, "lock.key"), "--out", lock]);
    await ok(["lock", "export", lock, "--pub", join(ex.root, "lock.pub"), ...reg, "--oci", join(work, "image")]);
    await ok(["keygen", "--out", join(work, "me")]);
    const ranText = await ok([
      "run",
      lock,
      "--pub",
      join(ex.root, "lock.pub"),
      ...reg,
      "--sign",
      join(work, "me.key"),
      "--cmd",
      "/usr/local/bin/lstree",
      "--json",
    ]);
    // issue 36 item 4: a signed lockfile run's document and a bundle's validate against their schemas
    assert.deepEqual(checkDocument(ranText, "cairn.cli.run/1").problems, [], ranText);
    const run = JSON.parse(ranText) as { run_dir: string; outcome: string };
    const bundle = join(work, "run.cairn");
    await ok(["bundle", run.run_dir, "--out", bundle]);
    // deterministic: the same run directory bundles to the same bytes
    const bundled = await ok(["bundle", run.run_dir, "--out", join(work, "again.cairn"), "--json"]);
    assert.deepEqual(checkDocument(bundled, "cairn.cli.bundle/1").problems, [], bundled);
    assert.ok(readFileSync(bundle).equals(readFileSync(join(work, "again.cairn"))));
    // nothing private without --include-private
    const opened = await openBundle(bundle);
    assert.equal([...opened.members.keys()].filter((p) => p.startsWith("private/")).length, 0);
    assert.equal(statSync(bundle).mode & 0o777, 0o644);
    // with --include-private: the exact streams, and the file is owner-only; they land in the imported run's streams/
    const privateBundle = join(work, "private.cairn");
    await ok(["bundle", run.run_dir, "--out", privateBundle, "--include-private"]);
    assert.equal(statSync(privateBundle).mode & 0o777, 0o600);
    const withPrivate = await openBundle(privateBundle);
    const stdout = readFileSync(join(run.run_dir, "streams", "1.stdout"));
    assert.ok(Buffer.from(withPrivate.members.get("private/streams/1.stdout")!).equals(stdout));
    const privHome = join(work, "private-home");
    const privImport = await importBundle(privateBundle, { storeDir: join(privHome, "store"), kitDir: join(privHome, "kit"), runsDir: join(privHome, "runs") });
    assert.ok(readFileSync(join(privImport.runDir, "streams", "1.stdout")).equals(stdout));
    assert.equal(statSync(join(privImport.runDir, "streams", "1.stdout")).mode & 0o777, 0o600);

    // another machine: another directory, a fresh home, no kit; the original home is gone
    const elsewhere = mkdtempSync(join(tmpdir(), "cairn-elsewhere-"));
    copyFileSync(bundle, join(elsewhere, "run.cairn"));
    copyFileSync(join(work, "me.pub"), join(elsewhere, "me.pub"));
    rmSync(home, { recursive: true, force: true });
    const { CAIRN_KIT: _kit, ...rest } = process.env;
    const fresh = { ...rest, CAIRN_HOME: join(elsewhere, "home") };
    const replayed = await ok(["replay", join(elsewhere, "run.cairn")], fresh);
    assert.match(replayed, /matches the record/);
    assert.match(replayed, new RegExp(`outcome  ${run.outcome}`));
    const imported = join(elsewhere, "home", "runs", readdirSync(join(elsewhere, "home", "runs")).find((n) => /^\d{8}T/.test(n))!);
    await ok(["receipt", "verify", join(imported, "receipt.dsse.json"), "--pub", join(elsewhere, "me.pub"), "--run", imported], fresh);
    // issue 31 case 12: the imported run replays by its directory, from the kit the import filled (its kit.json lists
    // this run's modules only; the run's objects are checked by digest), and bundles again to the same bytes
    assert.match(await ok(["replay", imported], fresh), /matches the record/);
    // issue 31 case 17: runs list says the run came from that bundle, and checks it
    assert.match(
      await ok(["runs", "list"], fresh),
      /(passed|completed) +unverified +\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ +\S+ +replays \+\+ +initramfs +bundle run\.cairn\n/,
    );
    // ... and bundles again with the same members (the kit's names are not carried: the import wrote no kit.json)
    await ok(["bundle", imported, "--out", join(elsewhere, "again.cairn")], fresh);
    const rebundled = await openBundle(join(elsewhere, "again.cairn"));
    const memberList = (b: typeof opened) => [...b.members.keys()].filter((p) => p !== "cairn-bundle.json").map((p) => [p, sha256(b.members.get(p)!)]);
    assert.deepEqual(memberList(rebundled), memberList(await openBundle(bundle)));
    assert.equal(rebundled.kit, null);
    rebundled.dispose();
    // a second replay of the same bundle reuses the imported run
    assert.match(await ok(["replay", join(elsewhere, "run.cairn")], fresh), /matches the record/);
    // environment.json is bound to the workload: another image manifest there is refused
    const envCopy = mkdtempSync(join(tmpdir(), "cairn-envjson-"));
    cpSync(imported, envCopy, { recursive: true });
    const envJson = JSON.parse(readFileSync(join(envCopy, "environment.json"), "utf8")) as { image_manifest: string };
    writeFileSync(join(envCopy, "environment.json"), JSON.stringify({ ...envJson, image_manifest: `sha256:${"1".repeat(64)}` }));
    const envRefused = await runCli(
      ["receipt", "verify", join(envCopy, "receipt.dsse.json"), "--pub", join(elsewhere, "me.pub"), "--run", envCopy, "--json"],
      fresh,
    );
    assert.equal((JSON.parse(envRefused.stdout) as { error: { code: string; path: string } }).error.path, "environment.json#/image_manifest");
    writeFileSync(join(imported, "assertions.json"), readFileSync(join(imported, "assertions.json"), "utf8").replace("true", "false"));
    const tampered = await runCli(
      ["receipt", "verify", join(imported, "receipt.dsse.json"), "--pub", join(elsewhere, "me.pub"), "--run", imported, "--json"],
      fresh,
    );
    assert.equal(tampered.code, 1);
    assert.equal((JSON.parse(tampered.stdout) as { error: { path: string } }).error.path, "/predicate/assertions/sha256");
    // ... but not an imported run that changed since
    assert.equal((await runCli(["replay", join(elsewhere, "run.cairn")], fresh)).code, 2);

    // hostile bundles: each refused before anything is imported
    const refused = async (name: string, bytes: Buffer, code: ErrorCode, path?: string, qemu?: string): Promise<void> => {
      const file = join(work, `${name}.cairn`);
      writeFileSync(file, bytes);
      const target = join(work, `home-${name}`);
      const e = await assertCodeAsync(
        () => importBundle(file, { storeDir: join(target, "store"), kitDir: join(target, "kit"), runsDir: join(target, "runs"), ...(qemu ? { qemu } : {}) }),
        code,
      );
      if (path !== undefined) assert.equal(e.path, path, name);
      assert.equal(existsSync(target), false, `${name}: nothing imported`);
    };
    const members = opened.members;
    const kernel = `kit/kernels/${opened.manifest.vm.kernel.slice(7)}`;
    // control: the unmodified members, rebuilt, open
    const control = join(work, "control.cairn");
    writeFileSync(
      control,
      rebuild(members, () => {}),
    );
    await openBundle(control);
    await refused("qemu", readFileSync(bundle), "VM_MISMATCH", "/vm/qemu", "9.9.9 (not the recording build)");
    await refused(
      "outside",
      rebuild(members, (f) => f.set("etc/passwd", Buffer.from("x"))),
      "BUNDLE_INVALID",
      "/etc",
    );
    await refused(
      "run-extra",
      rebuild(members, (f) => f.set("run/extra.json", Buffer.from("{}"))),
      "BUNDLE_INVALID",
      "/run/extra.json",
    );
    await refused(
      "symlink",
      rebuild(members, (_f, x) => x.push({ type: "symlink", path: "run/link", target: "/etc/passwd" })),
      "BUNDLE_INVALID",
      "/run/link",
    );
    await refused(
      "misnamed",
      rebuild(members, (f) => f.set(`store/objects/${"0".repeat(64)}`, Buffer.from("x"))),
      "BUNDLE_INVALID",
      `/store/objects/${"0".repeat(64)}`,
    );
    await refused(
      "changed",
      rebuild(members, (f) => f.set("run/events.json", Buffer.from("[]")), false),
      "BUNDLE_INVALID",
    );
    // issue 31 case 19: the same size, one byte flipped, the index unchanged: refused by the digest the index gives for that member
    const flipped = Buffer.from(members.get("run/events.json")!);
    flipped[flipped.length - 2]! ^= 1;
    const eventsIndex = (JSON.parse(Buffer.from(members.get("cairn-bundle.json")!).toString("utf8")) as { members: { path: string }[] }).members.findIndex(
      (m) => m.path === "run/events.json",
    );
    await refused(
      "flipped",
      rebuild(members, (f) => f.set("run/events.json", flipped), false),
      "BUNDLE_INVALID",
      `/members/${eventsIndex}`,
    );
    await refused(
      "no-kernel",
      rebuild(members, (f) => f.delete(kernel)),
      "BUNDLE_INVALID",
      "run.json#/vm/kernel",
    );
    const rawObject = [...members.keys()].find((p) => p.startsWith("store/objects/"))!;
    await refused(
      "no-object",
      rebuild(members, (f) => f.delete(rawObject)),
      "BUNDLE_INVALID",
    );
    await refused(
      "receipt-elsewhere",
      rebuild(members, (f) => f.set("run/events.json", Buffer.from(`${Buffer.from(f.get("run/events.json")!).toString("utf8")} `))),
      "BUNDLE_INVALID",
      "run/receipt.dsse.json#/predicate/events/sha256",
    );
    // second pass (issue 31): a bundle whose run names all eleven kit modules (each a module object it carries) and the
    // current agent sources imports into a fresh home; before, the import wrote a kit.json that `cairn run` took as a
    // set-up kit, so the bundle's kernel, modules and agent would have recorded this home's next runs
    const vm = JSON.parse(Buffer.from(members.get("run/run.json")!).toString("utf8")) as { vm: { kernel_modules: string[] } } & Record<string, unknown>;
    const someModule = vm.vm.kernel_modules[0]!.split("=")[1]!;
    const poisoned: Record<string, unknown> = { ...vm, vm: { ...vm.vm, kernel_modules: KIT_MODULES.map(([name]) => `${name}=${someModule}`) } };
    poisoned.vm_digest = vmDigest(parseVmIdentity(poisoned.vm as never, "/vm"));
    const poison = join(work, "poison.cairn");
    writeFileSync(
      poison,
      rebuild(members, (f) => {
        f.set("run/run.json", Buffer.from(JSON.stringify(poisoned)));
        f.delete("run/receipt.dsse.json"); // the receipt binds run.json's digest
        const index = JSON.parse(Buffer.from(f.get("cairn-bundle.json")!).toString("utf8")) as { kit: Record<string, string> };
        f.set("cairn-bundle.json", Buffer.from(JSON.stringify({ ...index, kit: { ...index.kit, agent_source: agentSourceDigest() } })));
      }),
    );
    const poisonHome = join(work, "home-poison");
    const poisonImport = await importBundle(poison, {
      storeDir: join(poisonHome, "store"),
      kitDir: join(poisonHome, "kit"),
      runsDir: join(poisonHome, "runs"),
    });
    assert.ok(existsSync(join(poisonImport.runDir, "run.json")), "the bundle imports (control: nothing else refuses it)");
    assert.equal(loadKit(join(poisonHome, "kit")), undefined, "an import never makes a kit a record would use");
    await interruptedImports(bundle, work);
    await refused("not-a-tar", Buffer.from("not a tar at all, just text that is long enough to fill part of a header block"), "TAR_INVALID");
  });
});
