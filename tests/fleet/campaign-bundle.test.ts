/**
 * Issue 34: `bundle:` entries of replay and verify campaigns. One run of the
 * bundled example (examples/workload/hello.yaml) is recorded, its receipt
 * signed with the campaign's key, written as a bundle file and pushed with
 * `cairn bundle push` to Debian's docker-registry (htpasswd auth) behind a
 * counting proxy. Then:
 *
 * - a verify campaign of the bundle file (no VM) imports it into the
 *   results directory and verifies it; a file that is not a bundle is
 *   refused naming the entry (beside the good one, the control);
 * - a reference whose digest the registry does not serve is refused naming
 *   the entry, and so is the good reference without credentials;
 * - a verify campaign of the `oci://` reference on a fresh node (its own
 *   CAIRN_HOME, store and kit) pulls each member once; a second campaign on
 *   that node pulls no blob; one cached blob corrupted, the next campaign
 *   fetches exactly that blob again, replaces it, and still verifies;
 * - a replay campaign of the reference (repeat 2, one job) on that node,
 *   with one cached blob corrupted again: both replays match, the first task
 *   fetches only the corrupt blob, the second none (2 VM replays in all).
 *
 * The registry flags (--plain-http) reach the task commands by argv and the
 * credentials by the environment only (REGISTRY_AUTH_FILE, absolute): the
 * campaign is run in-process (runCli) with an environment the test process
 * itself does not have, so a task that did not get it could not pull; the
 * password appears in no file of the results directory. Tasks run as
 * `bin/cairn.js campaign task`: build dist/ first (npm run build).
 */
import assert from "node:assert/strict";
import { chmodSync, copyFileSync, cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { generateSigningKey, sha256, writeKeyPair, readSigningKey } from "../../src/core/index.ts";
import { bundleKit, signReceipt, vmDigest, writeRunBundle, type RunManifest } from "../../src/vm/index.ts";
import { runCli } from "../helpers/cli.ts";
import { checkDocument } from "../helpers/json-schemas.ts";
import { needs } from "../helpers/prerequisites.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { TEST_KIT_DIR, testKit, VM_SKIP } from "../vm/fixtures/kit.ts";
import { buildProgram, GCC_SKIP } from "../workload/fixtures/static-program.ts";
import { HostileProxy } from "../registry/fixtures/hostile-proxy.ts";
import { missingRegistryTools, TestRegistry } from "../registry/fixtures/registry-server.ts";

const skip = VM_SKIP || GCC_SKIP || needs(missingRegistryTools());
const USER = "fleet-user";
const SECRET = "Fl33t-s3cret-9d41c7";
const MEMBER = "org.cairn.bundle.member";

interface Summary {
  tasks: number;
  ran: number;
  verdicts: Record<string, number>;
}
interface ReportLine {
  task: string;
  verdict: string;
  field: string | null;
  run: string;
}
interface ErrorDoc {
  error: { code: string; path: string | null; message: string };
}

describe("bundle entries in replay and verify campaigns", { skip }, () => {
  let work: string;
  let registry: TestRegistry;
  let proxy: HostileProxy;
  let env: NodeJS.ProcessEnv;
  let node: NodeJS.ProcessEnv;
  let keyPath: string;
  let pubPath: string;
  let runDir: string;
  let bundleFile: string;
  let reference: string;
  let layers: Array<{ digest: string; path: string }>;

  const cli = async (args: string[], e: NodeJS.ProcessEnv) => runCli(args, e);
  const blobGets = (from: number) => proxy.seen.slice(from).filter((x) => x.method === "GET" && x.path.includes("/blobs/"));
  const campaign = (name: string, body: string): string => {
    const f = join(work, `${name}.yaml`);
    writeFileSync(f, body);
    return f;
  };
  const run = async (file: string, out: string, e: NodeJS.ProcessEnv, extra: string[] = []) => {
    const r = await cli(["campaign", "run", file, "--key", keyPath, "--out", join(work, out), "--jobs", "1", "--json", ...extra], e);
    return { ...r, doc: JSON.parse(r.stdout) as Summary & Partial<ErrorDoc> };
  };
  const report = async (out: string): Promise<ReportLine[]> => {
    const r = await cli(["campaign", "report", join(work, out), "--json"], env);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    return (JSON.parse(r.stdout) as { tasks: ReportLine[] }).tasks;
  };
  const verified = async (out: string) => {
    const v = await cli(["campaign", "verify", join(work, out), "--pub", pubPath], env);
    assert.equal(v.code, 0, v.stdout + v.stderr);
  };
  const noSecretIn = (dir: string) => {
    const basic = Buffer.from(`${USER}:${SECRET}`).toString("base64");
    for (const f of readdirSync(dir, { recursive: true }).map(String)) {
      const p = join(dir, f);
      if (!statSync(p).isFile()) continue;
      const text = readFileSync(p, "latin1");
      assert.ok(!text.includes(SECRET) && !text.includes(basic), `${f} holds no credential`);
    }
  };
  /** Flips one byte of a node's cached store object (same size), as a bad disk would. */
  const corrupt = (home: string, digest: string) => {
    const f = join(home, "store", "objects", "sha256", digest.slice(7));
    assert.ok(existsSync(f), `the node caches ${digest}`);
    chmodSync(f, 0o600);
    const b = readFileSync(f);
    b[b.length >> 1]! ^= 0xff;
    writeFileSync(f, b);
  };

  before(async () => {
    await testKit();
    work = mkdtempSync(join(tmpdir(), "cairn-fleet-bundle-"));
    copyFileSync(join(PROJECT_ROOT, "examples", "workload", "hello.yaml"), join(work, "hello.yaml"));
    copyFileSync(buildProgram("static"), join(work, "hello"));
    ({ keyPath, pubPath } = writeKeyPair(join(work, "k"), generateSigningKey()));
    registry = await TestRegistry.create(join(work, "registry"), { users: { [USER]: SECRET } });
    proxy = await new HostileProxy(registry.port).start();
    const auth = join(work, "auth.json");
    writeFileSync(auth, JSON.stringify({ auths: { [proxy.host]: { auth: Buffer.from(`${USER}:${SECRET}`).toString("base64") } } }), { mode: 0o600 });
    assert.equal(process.env.REGISTRY_AUTH_FILE, undefined, "the test process itself holds no credentials");
    env = { ...process.env, CAIRN_HOME: join(work, "home"), CAIRN_KIT: TEST_KIT_DIR, REGISTRY_AUTH_FILE: auth };
    // the node: a home of its own, nothing cached, its kit empty (the bundle brings the kernel and agent)
    node = { ...env, CAIRN_HOME: join(work, "node"), CAIRN_KIT: join(work, "node", "kit") };
    const rec = await cli(["run", join(work, "hello.yaml"), "--json"], env);
    assert.equal(rec.code, 0, rec.stdout + rec.stderr);
    runDir = (JSON.parse(rec.stdout) as { run_dir: string }).run_dir;
    signReceipt(runDir, [readSigningKey(keyPath)]);
    bundleFile = join(work, "hello.cairn");
    writeRunBundle({ runDir, storeDir: join(work, "home", "store"), kit: bundleKit(TEST_KIT_DIR, runDir), out: bundleFile });
    const pushed = await cli(["bundle", "push", runDir, `oci://${proxy.host}/runs/hello:t`, "--plain-http", "--json"], env);
    assert.equal(pushed.code, 0, pushed.stdout + pushed.stderr);
    reference = (JSON.parse(pushed.stdout) as { reference: string }).reference;
    const m = await fetch(`http://${registry.host}/v2/runs/hello/manifests/${reference.split("@")[1]}`, {
      headers: { accept: "application/vnd.oci.image.manifest.v1+json", authorization: `Basic ${Buffer.from(`${USER}:${SECRET}`).toString("base64")}` },
    });
    const doc = (await m.json()) as { layers: Array<{ digest: string; annotations: Record<string, string> }> };
    layers = doc.layers.map((l) => ({ digest: l.digest, path: l.annotations[MEMBER]! }));
  });
  after(async () => {
    await proxy?.stop();
    await registry?.stop();
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
  });

  it("a verify campaign of a bundle file imports it into the results directory and verifies it; a file that is not a bundle is refused naming the entry", async () => {
    const good = campaign("verify-file", "schema: cairn.campaign/1\nmode: verify\nruns: [{bundle: ./hello.cairn}]\n");
    const r = await run(good, "verify-file.results", env);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.deepEqual(r.doc.verdicts, { verified: 1 });
    const [line] = await report("verify-file.results");
    assert.equal(line!.run, join(work, "verify-file.results", "runs", runDir.split("/").at(-1)!), "imported under DIR/runs");
    assert.ok(readFileSync(join(line!.run, "run.json")).equals(readFileSync(join(runDir, "run.json"))));
    await verified("verify-file.results");
    // the same run named by its directory is the same task (the name covers run.json, not how it travelled)
    const plan = JSON.parse(readFileSync(join(work, "verify-file.results", "campaign.json"), "utf8")) as { tasks: Array<{ id: string }> };
    const byDir = campaign("verify-dir", `schema: cairn.campaign/1\nmode: verify\nruns: [{run: ${JSON.stringify(runDir)}}]\n`);
    const d = await run(byDir, "verify-dir.results", env);
    assert.equal(d.code, 0, d.stdout + d.stderr);
    const planDir = JSON.parse(readFileSync(join(work, "verify-dir.results", "campaign.json"), "utf8")) as { tasks: Array<{ id: string }> };
    assert.equal(planDir.tasks[0]!.id, plan.tasks[0]!.id);
    // `campaign task --json`, the command an executor starts, printed and checked against its schema: once for a
    // task already published (nothing run again), once for the same task after its result is removed (run and published)
    const task = planDir.tasks[0]!.id;
    const taskJson = async () => {
      const t = await cli(["campaign", "task", join(work, "verify-dir.results"), task, "--key", keyPath, "--json"], env);
      assert.equal(t.code, 0, t.stdout + t.stderr);
      const { doc, problems } = checkDocument(t.stdout, "cairn.cli.campaign-task/1");
      assert.deepEqual(problems, [], t.stdout);
      return doc;
    };
    assert.deepEqual(await taskJson(), { schema: "cairn.cli.campaign-task/1", task, published: false, verdict: null, field: null });
    rmSync(join(work, "verify-dir.results", "tasks", task), { recursive: true });
    assert.deepEqual(await taskJson(), { schema: "cairn.cli.campaign-task/1", task, published: true, verdict: "verified", field: null });

    // a run recorded under another QEMU: verified offline all the same (verify needs no QEMU); its replay is a finding at /vm/qemu
    const other = join(work, "other-qemu-run");
    cpSync(runDir, other, { recursive: true });
    rmSync(join(other, "receipt.dsse.json"));
    const m = JSON.parse(readFileSync(join(other, "run.json"), "utf8")) as RunManifest & { vm: { qemu: string } };
    m.vm.qemu = "0.0.0 (not this host's)";
    (m as { vm_digest: string }).vm_digest = vmDigest(m.vm);
    writeFileSync(join(other, "run.json"), JSON.stringify(m, null, 2));
    writeRunBundle({ runDir: other, storeDir: join(work, "home", "store"), kit: bundleKit(TEST_KIT_DIR, other), out: join(work, "other.cairn") });
    const ov = await run(campaign("verify-other", "schema: cairn.campaign/1\nmode: verify\nruns: [{bundle: ./other.cairn}]\n"), "verify-other.results", env);
    assert.equal(ov.code, 0, ov.stdout + ov.stderr);
    assert.deepEqual(ov.doc.verdicts, { unverified: 1 }, "no receipt by the key, and no QEMU needed");
    const or = await run(campaign("replay-other", "schema: cairn.campaign/1\nmode: replay\nruns: [{bundle: ./other.cairn}]\n"), "replay-other.results", env);
    assert.equal(or.code, 1, or.stdout + or.stderr);
    assert.equal(or.doc.error?.code, "REPLAY_MISMATCH", "a finding, not an infrastructure failure");
    const [mis] = await report("replay-other.results");
    assert.equal(mis!.verdict, "mismatched");
    assert.equal(mis!.field, "/vm/qemu");

    writeFileSync(join(work, "not-a-bundle.cairn"), "plain text\n");
    const bad = campaign("verify-bad", "schema: cairn.campaign/1\nmode: verify\nruns: [{bundle: ./hello.cairn}, {bundle: ./not-a-bundle.cairn}]\n");
    const b = await run(bad, "verify-bad.results", env);
    assert.equal(b.code, 1, b.stdout + b.stderr);
    assert.equal(b.doc.error?.code, "CAMPAIGN_INVALID");
    assert.equal(b.doc.error?.path, "/runs/1/bundle");
    assert.match(b.doc.error!.message, /not-a-bundle\.cairn/);
    assert.equal(existsSync(join(work, "verify-bad.results")), false, "nothing ran: the plan is checked first");
  });

  it("a reference whose digest the registry does not serve is refused naming the entry; the good one without credentials too", async () => {
    const missing = reference.replace(/@sha256:.*/, `@${sha256(Buffer.from("no such bundle"))}`);
    const f = campaign(
      "missing",
      `schema: cairn.campaign/1\nmode: replay\nruns: [{bundle: ${JSON.stringify(reference)}}, {bundle: ${JSON.stringify(missing)}}]\n`,
    );
    const r = await run(f, "missing.results", node, ["--plain-http"]);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.equal(r.doc.error?.code, "CAMPAIGN_INVALID");
    assert.equal(r.doc.error?.path, "/runs/1/bundle");
    assert.ok(r.doc.error!.message.includes(missing), r.doc.error!.message);
    // a manifest (served by the proxy under its own digest) naming run/run.json twice: the import would refuse it, so does the plan
    const doubled = (await (
      await fetch(`http://${registry.host}/v2/runs/hello/manifests/${reference.split("@")[1]}`, {
        headers: { accept: "application/vnd.oci.image.manifest.v1+json", authorization: `Basic ${Buffer.from(`${USER}:${SECRET}`).toString("base64")}` },
      })
    ).json()) as { layers: Array<{ annotations: Record<string, string> }> };
    const runJson = doubled.layers.find((l) => l.annotations[MEMBER] === "run/run.json")!;
    doubled.layers.push(JSON.parse(JSON.stringify(runJson)) as (typeof doubled.layers)[number]);
    const bytes = Buffer.from(JSON.stringify(doubled));
    const twice = reference.replace(/@sha256:.*/, `@${sha256(bytes)}`);
    proxy.hooks = {
      intercept: (x, res) => {
        if (x.path !== `/v2/runs/hello/manifests/${sha256(bytes)}`) return false;
        res.writeHead(200, { "content-type": "application/vnd.oci.image.manifest.v1+json", "content-length": String(bytes.length) });
        res.end(x.method === "HEAD" ? undefined : bytes);
        return true;
      },
    };
    try {
      const d = await run(campaign("twice", `schema: cairn.campaign/1\nmode: verify\nruns: [{bundle: ${JSON.stringify(twice)}}]\n`), "twice.results", node, [
        "--plain-http",
      ]);
      assert.equal(d.code, 1, d.stdout + d.stderr);
      assert.equal(d.doc.error?.code, "CAMPAIGN_INVALID");
      assert.equal(d.doc.error?.path, "/runs/0/bundle");
      assert.match(d.doc.error!.message, /run\/run\.json twice/);
    } finally {
      proxy.hooks = {};
    }
    const { REGISTRY_AUTH_FILE: _, ...anonymous } = node;
    const good = campaign("anonymous", `schema: cairn.campaign/1\nmode: verify\nruns: [{bundle: ${JSON.stringify(reference)}}]\n`);
    const a = await run(good, "anonymous.results", { ...anonymous, HOME: join(work, "nohome") }, ["--plain-http"]);
    assert.equal(a.code, 1, a.stdout + a.stderr);
    assert.equal(a.doc.error?.code, "REMOTE_AUTH");
    assert.equal(a.doc.error?.path, "/runs/0/bundle");
    assert.equal(existsSync(join(work, "node", "store", "objects")), false, "the plan pulls nothing into a store");
  });

  it("a verify campaign of the reference pulls each member once on a fresh node, nothing the second time, and only a corrupt cached blob again", async () => {
    const f = campaign("verify-oci", `schema: cairn.campaign/1\nmode: verify\nruns: [{bundle: ${JSON.stringify(reference)}}]\n`);
    let from = proxy.seen.length;
    const first = await run(f, "verify-oci-1.results", node, ["--plain-http"]);
    assert.equal(first.code, 0, first.stdout + first.stderr);
    assert.deepEqual(first.doc.verdicts, { verified: 1 });
    const unique = new Set(layers.map((l) => l.digest)).size;
    // the plan reads run.json (1 blob); the task fetches every member and the index
    assert.equal(blobGets(from).length, 1 + unique + 1);
    await verified("verify-oci-1.results");
    noSecretIn(join(work, "verify-oci-1.results"));

    from = proxy.seen.length;
    const second = await run(f, "verify-oci-2.results", node, ["--plain-http"]);
    assert.equal(second.code, 0, second.stdout + second.stderr);
    assert.deepEqual(second.doc.verdicts, { verified: 1 });
    assert.equal(blobGets(from).length, 1, "the plan's run.json only: the task pulls nothing");

    const workloadObject = layers.find((l) => l.path.startsWith("store/objects/"))!;
    corrupt(join(work, "node"), workloadObject.digest);
    from = proxy.seen.length;
    const third = await run(f, "verify-oci-3.results", node, ["--plain-http"]);
    assert.equal(third.code, 0, third.stdout + third.stderr);
    assert.deepEqual(third.doc.verdicts, { verified: 1 });
    const got = blobGets(from).map((x) => x.path.split("/blobs/")[1]);
    assert.deepEqual(got.slice(1), [workloadObject.digest], "the corrupt copy, and nothing else, fetched again");
    const repaired = readFileSync(join(work, "node", "store", "objects", "sha256", workloadObject.digest.slice(7)));
    assert.equal(sha256(repaired), workloadObject.digest, "the verified bytes replaced the corrupt copy");
  });

  it("a replay campaign of the reference, two tasks on one node: a corrupt cached blob is fetched again by the first, the second pulls nothing, both match", async () => {
    const f = campaign("replay-oci", `schema: cairn.campaign/1\nmode: replay\nruns: [{bundle: ${JSON.stringify(reference)}}]\nrepeat: 2\n`);
    const obj = layers.find((l) => l.path.startsWith("store/objects/"))!;
    corrupt(join(work, "node"), obj.digest);
    const from = proxy.seen.length;
    const r = await run(f, "replay-oci.results", node, ["--plain-http"]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.deepEqual(r.doc.verdicts, { matched: 2 });
    const got = blobGets(from).map((x) => x.path.split("/blobs/")[1]);
    assert.deepEqual(got.slice(1), [obj.digest], "plan: run.json; first task: the corrupt copy; second task: nothing");
    const lines = await report("replay-oci.results");
    assert.equal(lines.length, 2);
    for (const l of lines) assert.equal(l.verdict, "matched");
    await verified("replay-oci.results");
    noSecretIn(join(work, "replay-oci.results"));
  });
});
