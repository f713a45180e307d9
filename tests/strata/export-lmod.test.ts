// Lock export and Lmod (issue 13 item 4): a lockfile whose layers carry
// modulefiles, or whose profile has an Lmod preload list, exports one more
// layer: the modulefiles at /opt/cairn/modulefiles/NAME/VERSION.lua and the
// login script /etc/profile.d/z-cairn-lmod.sh. umoci unpacks the image and
// Debian's Lmod, on the host, sources the unpacked login script with
// MODULEPATH at the unpacked tree (chroot-free) and loads the defaults. A
// lockfile with none of it exports exactly as before: its manifest digests
// are pinned, computed by the code before this layer existed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sha256 } from "../../src/core/index.ts";
import { EXPORT_MODULE_ROOT, lmodExportLayer } from "../../src/strata/export-lmod.ts";
import { LMOD_LOGIN_SCRIPT } from "../../src/strata/index.ts";
import { assertCodeAsync } from "../helpers/errors.ts";
import { needs } from "../helpers/prerequisites.ts";
import { umociAvailable } from "../tree/fixtures/umoci.ts";
import { exportFixture, pinnedFixture, type PinnedFixture } from "./export-fixtures.ts";
import { tempDir } from "./fixtures.ts";

const LMOD_INIT = "/usr/share/lmod/lmod/init/bash";
const lmodMissing = existsSync(LMOD_INIT) ? undefined : "Lmod (Debian package lmod, scripts/setup-host.sh)";
const umociMissing = umociAvailable() ? undefined : "umoci (Debian package umoci, scripts/setup-host.sh)";

test("a lockfile without modulefiles, an Lmod preload list or frozen packages exports exactly as before (pinned manifest digests)", async () => {
  const cases: [Parameters<typeof pinnedFixture>[0], string][] = [
    // moved on purpose (issue 32): the lockfile became Strata's LockFile, so its bytes and identities, both in the
    // image's annotations, moved (an unpinned request lives in cairn's records, not in the lockfile)
    [{}, "sha256:69cf312107d50ff1394dae999a05991c2dac3434358f2b1db0ed71f3aa57d2b2"],
    [{ extra: "packages:\n  - manager: pip\n    packages: [{name: numpy}]\n" }, "sha256:5ff42be4eb38de20ff98a6f5375e463b7afbe8b406b9c7482be87140a85bfd6c"],
  ];
  for (const [o, digest] of cases) {
    const f = await pinnedFixture(o);
    const r = await exportFixture(f, join(tempDir("cairn-export-pin-out-"), "img"));
    assert.equal(r.layout.manifest.digest, digest, JSON.stringify(o));
    assert.deepEqual(r.added, []);
    assert.equal(r.layout.layers, 1 + f.lock.layers.length);
  }
  // Control: the same layers with a modulefile are another image (the pin can fail).
  const m = await pinnedFixture({ modulefile: true });
  const r = await exportFixture(m, join(tempDir("cairn-export-pin-out-"), "img"));
  assert.notEqual(r.layout.manifest.digest, cases[0]![1]);
});

/** Unpacks the exported layout with umoci (the copy gets a ref name, the only edit; every blob stays cairn's). */
function umociUnpack(layout: string): string {
  const copy = join(tempDir("cairn-export-umoci-"), "layout");
  cpSync(layout, copy, { recursive: true });
  const index = JSON.parse(readFileSync(join(copy, "index.json"), "utf8")) as { manifests: { annotations?: Record<string, string> }[] };
  index.manifests[0]!.annotations = { "org.opencontainers.image.ref.name": "x" };
  writeFileSync(join(copy, "index.json"), JSON.stringify(index));
  const root = join(tempDir("cairn-export-rootfs-"), "root");
  execFileSync("umoci", ["raw", "unpack", "--image", `${copy}:x`, root], { stdio: ["ignore", "ignore", "pipe"] });
  return root;
}

/** Sources Lmod, sets MODULEPATH, then sources `script`; returns the environment afterwards. */
function login(script: string, modulepath: string): Map<string, string> {
  const out = execFileSync(
    "bash",
    ["--noprofile", "--norc", "-c", `source ${LMOD_INIT}; export MODULEPATH="$1"; source "$2"; env -0`, "login", modulepath, script],
    { env: { PATH: "/usr/bin:/bin", HOME: tempDir("cairn-export-home-") }, stdio: ["ignore", "pipe", "pipe"] },
  );
  const env = new Map<string, string>();
  for (const kv of out.toString("utf8").split("\0")) {
    const eq = kv.indexOf("=");
    if (eq > 0) env.set(kv.slice(0, eq), kv.slice(eq + 1));
  }
  return env;
}

test("export writes the Lmod tree and login script as one more layer; under Lmod the unpacked login script loads the defaults", {
  skip: needs(lmodMissing) || needs(umociMissing),
}, async () => {
  const f = await pinnedFixture({ modulefile: true, defaults: "[hello@1.0]" });
  const out = join(tempDir("cairn-export-lmod-"), "img");
  const r = await exportFixture(f, out);
  assert.deepEqual(
    r.added.map((a) => a.kind),
    ["lmod"],
  );
  assert.equal(r.layout.layers, 1 + f.lock.layers.length + 1);
  const again = await exportFixture(f, join(tempDir("cairn-export-lmod-"), "img"));
  assert.equal(again.layout.manifest.digest, r.layout.manifest.digest, "the added layer follows from the lockfile alone");

  const root = umociUnpack(out);
  const hello = f.lock.layers.find((l) => l.name === "hello")!;
  const tree = join(root, EXPORT_MODULE_ROOT);
  assert.equal(sha256(readFileSync(join(tree, "hello", "1.0.lua"))), hello.modulefile!.sha256, "the tree holds the bytes the lockfile pins");
  assert.equal(existsSync(join(tree, "tools")), false, "a layer without a modulefile has none in the tree");
  const script = join(root, LMOD_LOGIN_SCRIPT);
  assert.match(readFileSync(script, "utf8"), /module use \/opt\/cairn\/modulefiles\n {2}module load hello\/1\.0\n/);

  const env = login(script, tree);
  assert.equal(env.get("HELLO_GREETING"), "hi there");
  assert.equal(env.get("PATH")?.split(":")[0], "/opt/hello/1.0/bin");
  assert.equal(env.get("LD_LIBRARY_PATH"), "/opt/hello/1.0/lib");
  assert.ok(env.get("LOADEDMODULES")?.split(":").includes("hello/1.0"));
  assert.equal(env.get("MODULEPATH")?.split(":")[0], "/opt/cairn/modulefiles", "the script puts the image's tree first");
  // Control: without the unpacked tree on MODULEPATH the module is not found, and nothing is set.
  assert.equal(login(script, join(root, "nowhere")).get("HELLO_GREETING"), undefined);

  // Control: no defaults preload nothing, but the tree and script are still written.
  const s = await pinnedFixture({ modulefile: true });
  const sout = join(tempDir("cairn-export-lmod-"), "img");
  const sr = await exportFixture(s, sout);
  assert.deepEqual(
    sr.added.map((a) => a.kind),
    ["lmod"],
  );
  const sroot = umociUnpack(sout);
  assert.ok(existsSync(join(sroot, EXPORT_MODULE_ROOT, "hello", "1.0.lua")));
  assert.equal(login(join(sroot, LMOD_LOGIN_SCRIPT), join(sroot, EXPORT_MODULE_ROOT)).get("HELLO_GREETING"), undefined);
});

test("defaults with no modulefile in the lockfile still write the login script, with a caveat naming them", async () => {
  const f = await pinnedFixture({ defaults: "[gcc@12.2, hello, formation:tools]" });
  const r = await exportFixture(f, join(tempDir("cairn-export-lmod-"), "img"));
  assert.deepEqual(
    r.added.map((a) => a.kind),
    ["lmod"],
  );
  // a ref naming a layer of the lockfile loads that layer's module (hello → hello/1.0); others are named as written
  assert.ok(r.caveats.some((c) => c.includes("Lmod must find them elsewhere on MODULEPATH: gcc/12.2, hello/1.0")));
  assert.ok(r.caveats.some((c) => c.includes("loads nothing for them: formation:tools")));
  // Control: a default the lockfile's layers carry is not named.
  const m = await pinnedFixture({ modulefile: true, defaults: "[hello]" });
  const mr = await exportFixture(m, join(tempDir("cairn-export-lmod-"), "img"));
  assert.ok(!mr.caveats.some((c) => c.includes("elsewhere on MODULEPATH")));
});

test("a blob whose modulefile is not the one the lockfile pins is refused (DIGEST_MISMATCH); control: the pinned one is written", async () => {
  const f: PinnedFixture = await pinnedFixture({ modulefile: true });
  const blobOf = (i: number): Buffer => f.registry.readBlob(f.lock.layers[i]!.sha256!, f.lock.layers[i]!.size!);
  const order = f.lock.layers.map((_, i) => i);
  const ok = await lmodExportLayer(f.lock, blobOf, order);
  assert.deepEqual(ok?.modules, ["hello/1.0"]);
  const i = f.lock.layers.findIndex((l) => l.modulefile !== undefined);
  const layers = f.lock.layers.map((l, j) => (j === i ? { ...l, modulefile: { path: l.modulefile!.path, sha256: sha256("other") } } : l));
  const e = await assertCodeAsync(() => lmodExportLayer({ ...f.lock, layers }, blobOf, order), "DIGEST_MISMATCH");
  assert.equal(e.path, `/layers/${i}/modulefile/sha256`);
});
