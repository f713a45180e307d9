// Issue 33, items 1 and 2: devcontainer-lock.json exactly as the devcontainers
// CLI (@devcontainers/cli, the peer, run from node_modules) reads and writes
// it. One local registry with TLS on 127.0.0.1 (a CA made with openssl here;
// the CLI speaks only https to a registry that is not `localhost`, and trusts
// the CA through NODE_EXTRA_CA_CERTS; cairn through --registry-ca) holds an
// image and three features published as the devcontainers spec lays them
// out: node depends on common, go installs after common, and common has no
// metadata annotation (its metadata is read from the layer, as is go's).
//
// The CLI commands that need no container engine: `upgrade --dry-run`
// prints the lockfile it would write (the same text its frozen check
// compares with the file on disk), `features resolve-dependencies` prints
// the install order.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { mkdirSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { RegistryClient } from "../../src/oci/index.ts";
import { runCli } from "../helpers/cli.ts";
import { needs } from "../helpers/prerequisites.ts";
import { pushFeature } from "./fixtures/devcontainer-features.ts";
import { tempDir, writeImage } from "./fixtures/images.ts";
import { TestRegistry, missingRegistryTools, skopeoPush } from "./fixtures/registry-server.ts";
import { makeTestCa, type TestCa } from "./fixtures/test-ca.ts";

const run = promisify(execFile);
const DEVCONTAINER = join(import.meta.dirname, "../../node_modules/@devcontainers/cli/devcontainer.js");
const skip = needs(missingRegistryTools() ?? (existsSync(DEVCONTAINER) ? undefined : "@devcontainers/cli (npm ci installs it)"));

describe("devcontainer-lock.json against the devcontainers CLI", { skip }, () => {
  let reg: TestRegistry;
  let work: string;
  let ca: TestCa;
  let H: string;
  const digests: Record<string, string> = {};
  let n = 0;

  /** A fresh project folder holding `name` (default .devcontainer/devcontainer.json) with this text. */
  const project = (text: string, name = ".devcontainer/devcontainer.json"): { dir: string; file: string } => {
    const dir = join(work, `p${n++}`);
    const file = join(dir, name);
    mkdirSync(join(file, ".."), { recursive: true });
    writeFileSync(file, text);
    return { dir, file };
  };
  const peer = async (args: string[]): Promise<string> => {
    const r = await run(process.execPath, [DEVCONTAINER, ...args], {
      env: { PATH: process.env.PATH, HOME: work, NODE_EXTRA_CA_CERTS: ca.ca },
      encoding: "utf8",
    });
    return r.stdout;
  };
  // ingest is offline: only commands that contact a registry take --registry-ca
  const cairn = (args: string[]) =>
    runCli([...args, ...(args[1] === "ingest" ? [] : ["--registry-ca", ca.ca])], { HOME: work, CAIRN_HOME: join(work, "cairn") });
  const declaration = (extra = ""): string =>
    `{
  // an image and two features by tag; node pulls in common
  "image": "${H}/images/base:1",
  "features": {
    "${H}/features/node:1": {},
    "${H}/features/go:1": { "version": "1.22" }
  }${extra}
}
`;

  before(async () => {
    work = tempDir("dclock");
    ca = makeTestCa(work);
    reg = await TestRegistry.create(join(work, "registry"), { tls: ca });
    H = reg.host;
    const client = new RegistryClient({ host: H, ca: readFileSync(ca.ca, "utf8") });
    for (const tag of ["1", "latest"])
      digests.common = await pushFeature(client, "features/common", tag, { id: "common", version: "1.2.0" }, { annotation: false });
    for (const tag of ["1", "latest"]) {
      digests.node = await pushFeature(client, "features/node", tag, { id: "node", version: "1.6.2", dependsOn: { [`${H}/features/common:1`]: {} } });
      digests.go = await pushFeature(
        client,
        "features/go",
        tag,
        { id: "go", version: "1.3.0", installsAfter: [`${H}/features/common`] },
        { annotation: false },
      );
    }
    const img = writeImage(join(work, "src"), "1");
    await skopeoPush(`${img.dir}:1`, `${H}/images/base:1`);
  });
  after(async () => {
    await reg?.stop();
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
  });

  test("pin --lockfile-only writes, byte for byte, the lockfile `devcontainer upgrade` writes (dependsOn closure, CLI key order)", async () => {
    const p = project(declaration());
    const theirs = await peer(["upgrade", "--dry-run", "--workspace-folder", p.dir]);
    const r = await cairn(["manifest", "pin", p.file, "--lockfile-only"]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const ours = readFileSync(join(p.dir, ".devcontainer", "devcontainer-lock.json"), "utf8");
    assert.equal(ours, theirs);
    const lock = JSON.parse(ours);
    assert.deepEqual(Object.keys(lock.features), [`${H}/features/common:1`, `${H}/features/go:1`, `${H}/features/node:1`]);
    assert.deepEqual(lock.features[`${H}/features/node:1`].dependsOn, [`${H}/features/common:1`]);
    assert.equal(lock.features[`${H}/features/common:1`].integrity, digests.common);
    assert.equal(lock.features[`${H}/features/common:1`].version, "1.2.0", "version read from the layer (no annotation)");
  });

  test("pin --write: the CLI's frozen check accepts cairn's lockfile unchanged (the text it would write is the file's)", async () => {
    const p = project(declaration());
    const r = await cairn(["manifest", "pin", p.file, "--write"]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const ours = readFileSync(join(p.dir, ".devcontainer", "devcontainer-lock.json"), "utf8");
    const text = readFileSync(p.file, "utf8");
    assert.ok(text.includes(`"${H}/features/node@${digests.node}"`));
    // keys are the ids as the rewritten file writes them; the closure feature keeps the id its dependent writes
    assert.deepEqual(Object.keys(JSON.parse(ours).features), [
      `${H}/features/common:1`,
      `${H}/features/go@${digests.go}`,
      `${H}/features/node@${digests.node}`,
    ]);
    // the CLI's frozen check: JSON.stringify(JSON.parse(file), null, 2) + "\n" must equal what it would write
    const theirs = await peer(["upgrade", "--dry-run", "--workspace-folder", p.dir]);
    assert.equal(`${JSON.stringify(JSON.parse(ours), null, 2)}\n`, theirs);
    assert.equal(ours, theirs);
    // control: the lock cairn wrote before this issue (keys as the old tags, no closure) is not what the CLI writes
    const old = { features: { [`${H}/features/go:1`]: JSON.parse(ours).features[`${H}/features/go@${digests.go}`] } };
    assert.notEqual(`${JSON.stringify(old, null, 2)}\n`, theirs);
  });

  test("cairn reads the CLI's own lockfile (with dependsOn): pinned, closure recorded, frozen check passes; a changed lock fails it", async () => {
    const p = project(declaration());
    const theirs = await peer(["upgrade", "--workspace-folder", p.dir]);
    assert.equal(theirs, "");
    const lockPath = join(p.dir, ".devcontainer", "devcontainer-lock.json");
    const cliLock = readFileSync(lockPath, "utf8");
    const ing = await cairn(["manifest", "ingest", p.file, "--json"]);
    assert.equal(ing.code, 0, ing.stdout + ing.stderr);
    const m = JSON.parse(ing.stdout).manifest;
    assert.equal(m.pinned, false, "the image is still by tag");
    assert.deepEqual(m.unpinned, ["/image"], "every feature, and the closure's common, pinned by the lock");
    assert.deepEqual(m.extension.feature_closure, [`${H}/features/common@${digests.common}`]);
    const frozen = await cairn(["manifest", "pin", p.file, "--frozen-lockfile", "--json"]);
    assert.equal(frozen.code, 0, frozen.stdout + frozen.stderr);
    assert.equal(readFileSync(lockPath, "utf8"), cliLock, "frozen writes nothing");
    // the closure entry removed: ingest refuses naming the dependency, frozen fails naming the feature
    const lock = JSON.parse(cliLock);
    delete lock.features[`${H}/features/common:1`];
    writeFileSync(lockPath, `${JSON.stringify(lock, null, 2)}\n`);
    const bad = await cairn(["manifest", "ingest", p.file, "--json"]);
    assert.equal(bad.code, 1);
    assert.equal(JSON.parse(bad.stdout).error.code, "MANIFEST_MISMATCH");
    assert.equal(JSON.parse(bad.stdout).error.path, `/features/${H}~1features~1node:1/dependsOn`);
    const changed = await cairn(["manifest", "pin", p.file, "--frozen-lockfile", "--json"]);
    assert.equal(changed.code, 1);
    assert.equal(JSON.parse(changed.stdout).error.code, "DEVCONTAINER_LOCK_FROZEN");
    assert.equal(JSON.parse(changed.stdout).error.path, `/features/${H}~1features~1common:1`);
  });

  test(".devcontainer.json has .devcontainer-lock.json beside it, as the CLI names it", async () => {
    const p = project(declaration(), ".devcontainer.json");
    await peer(["upgrade", "--workspace-folder", p.dir]);
    assert.ok(existsSync(join(p.dir, ".devcontainer-lock.json")), "the CLI's name");
    const ing = await cairn(["manifest", "ingest", p.file, "--json"]);
    assert.equal(ing.code, 0, ing.stdout + ing.stderr);
    assert.deepEqual(JSON.parse(ing.stdout).manifest.unpinned, ["/image"], "cairn read it");
    rmSync(join(p.dir, ".devcontainer-lock.json"));
    const r = await cairn(["manifest", "pin", p.file, "--lockfile-only"]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.ok(existsSync(join(p.dir, ".devcontainer-lock.json")));
    assert.ok(!existsSync(join(p.dir, "devcontainer-lock.json")));
  });

  test("an empty lockfile means 'write the lock': ingest does not refuse it, pin fills it", async () => {
    const p = project(declaration());
    const lockPath = join(p.dir, ".devcontainer", "devcontainer-lock.json");
    writeFileSync(lockPath, "");
    const ing = await cairn(["manifest", "ingest", p.file, "--json"]);
    assert.equal(ing.code, 0, ing.stdout + ing.stderr);
    assert.equal(JSON.parse(ing.stdout).manifest.pinned, false);
    const r = await cairn(["manifest", "pin", p.file]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.equal(readFileSync(lockPath, "utf8"), await peer(["upgrade", "--dry-run", "--workspace-folder", p.dir]));
    // control: a lockfile that is not empty and not JSON is still refused
    writeFileSync(lockPath, "{");
    assert.equal((await cairn(["manifest", "ingest", p.file, "--json"])).code, 1);
  });

  test("install order: cairn's is the CLI's, and overrideFeatureInstallOrder may name a feature dependsOn pulls in", async () => {
    const p = project(declaration(`,\n  "overrideFeatureInstallOrder": ["${H}/features/node", "${H}/features/common"]`));
    const out = await peer(["features", "resolve-dependencies", "--workspace-folder", p.dir]);
    const theirs = JSON.parse(out.slice(out.indexOf("{"))).installOrder.map((f: { id: string }) => f.id);
    const r = await cairn(["manifest", "pin", p.file, "--json"]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const ours = JSON.parse(r.stdout).install_order.map((f: { id: string; digest: string }) => `${f.id.replace(/[:@][^/]*$/, "")}@${f.digest}`);
    assert.deepEqual(ours, theirs);
    assert.deepEqual(ours, [`${H}/features/common@${digests.common}`, `${H}/features/node@${digests.node}`, `${H}/features/go@${digests.go}`]);
    // manifest show prints the same order, each feature at its digest, the dependency marked as one
    const show = await cairn(["manifest", "show", p.file, "--json"]);
    assert.equal(show.code, 0, show.stdout + show.stderr);
    const shown = JSON.parse(show.stdout).install_order;
    assert.deepEqual(
      shown.map((o: { resolved: string }) => o.resolved),
      theirs,
    );
    assert.deepEqual(
      shown.map((o: { kind: string }) => o.kind),
      ["dependency", "declared", "declared"],
    );
    const human = await cairn(["manifest", "show", p.file]);
    assert.match(human.stdout, /1\. .*features\/common:1 {2}\(dependency\)/);
    // the file ingests offline (before this issue: "names no declared feature")
    const ing = await cairn(["manifest", "ingest", p.file, "--no-lockfile", "--json"]);
    assert.equal(ing.code, 0, ing.stdout + ing.stderr);
    // an override naming a feature outside the resolved closure is refused, naming it
    const q = project(declaration(`,\n  "overrideFeatureInstallOrder": ["${H}/features/python"]`));
    const bad = await cairn(["manifest", "pin", q.file, "--json"]);
    assert.equal(bad.code, 1);
    assert.equal(JSON.parse(bad.stdout).error.code, "FEATURE_DEPENDENCY");
  });

  test("a lock entry whose digest the registry does not serve is refused, naming the feature", async () => {
    const p = project(declaration());
    await cairn(["manifest", "pin", p.file, "--lockfile-only"]);
    const lockPath = join(p.dir, ".devcontainer", "devcontainer-lock.json");
    const lock = JSON.parse(readFileSync(lockPath, "utf8"));
    const e = lock.features[`${H}/features/common:1`];
    e.integrity = digests.go; // a digest this repository does not hold
    e.resolved = `${H}/features/common@${digests.go}`;
    writeFileSync(lockPath, `${JSON.stringify(lock, null, 2)}\n`);
    const r = await cairn(["manifest", "pin", p.file, "--frozen-lockfile", "--json"]);
    assert.equal(r.code, 1);
    const err = JSON.parse(r.stdout).error;
    assert.equal(err.code, "MANIFEST_MISMATCH");
    assert.equal(err.path, `${H}/features/common:1`);
  });

  test("--registry-ca: a registry with a private CA is trusted only with it; a bad CA file is a typed refusal", async () => {
    const p = project(declaration());
    const env = { HOME: work, CAIRN_HOME: join(work, "cairn") };
    const without = await runCli(["manifest", "pin", p.file, "--json"], env);
    assert.equal(without.code, 1, "control: the system roots do not trust the test CA");
    writeFileSync(join(work, "not-a-ca.pem"), readFileSync(ca.certificate)); // a server certificate, not a CA
    writeFileSync(join(work, "junk.pem"), "hello\n");
    for (const f of ["not-a-ca.pem", "junk.pem"]) {
      const r = await runCli(["manifest", "pin", p.file, "--json", "--registry-ca", join(work, f)], env);
      assert.equal(r.code, 1);
      assert.equal(JSON.parse(r.stdout).error.code, "REMOTE_CA_INVALID");
      assert.ok(!r.stdout.includes("hello"), "the file's contents are not echoed");
    }
    const viaEnv = await runCli(["manifest", "pin", p.file, "--json"], { ...env, CAIRN_REGISTRY_CA: ca.ca });
    assert.equal(viaEnv.code, 0, viaEnv.stdout + viaEnv.stderr);
  });
});
