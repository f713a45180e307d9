/**
 * Issue 34 items 1 and 2: the campaign file is read strictly with named
 * limits, and expands into tasks named by the identities they run
 * (cairn.task/1), the same every time, with points that give the same task
 * collapsed into one. No VM: expansion assembles the workload only.
 */
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { CAMPAIGN_LIMITS, writeKeyPair } from "../../src/core/index.ts";
import { expandCampaign, makePlan, parseCampaign, readCampaignFile, readPlan, taskName, writePlan } from "../../src/fleet/index.ts";
import { assembleWorkload } from "../../src/workload/index.ts";
import { NOW } from "../strata/fixtures.ts";
import { exportFixture, LOCK_KEY, pinnedFixture, REGISTRY_KEY } from "../strata/export-fixtures.ts";
import { assertCode, assertCodeAsync } from "../helpers/errors.ts";
import { GCC_SKIP } from "../workload/fixtures/static-program.ts";
import { helloDir, writeCampaign } from "./fixtures/campaigns.ts";

const parse = (text: string) => parseCampaign(Buffer.from(text), "/tmp/c/campaign.yaml");
const RECORD = "schema: cairn.campaign/1\nmode: record\nruns: [{spec: ./hello.yaml}]\n";
const LOCK_ENTRY = "{lock: ./env.lock, pub: ./lock.pub, registry: ./registry, base: rootfs:./rootfs, cmd: [/bin/hello, x]}";
/** A record campaign of one lock entry, `extra` fields added and `without` removed. */
function lockCampaign(extra = "", without?: string): string {
  let entry = LOCK_ENTRY.replace(/^\{lock: \.\/env\.lock, /, "");
  if (without !== undefined) entry = entry.replace(new RegExp(`${without}: (\\[[^\\]]*\\]|[^,}]*)(, )?`), "");
  if (extra !== "") entry = entry.replace(/\}$/, `, ${extra}}`);
  if (extra.startsWith("registry") || extra.startsWith("base")) entry = entry.replace(/registry: \.\/registry, base: rootfs:\.\/rootfs, /, "");
  return `schema: cairn.campaign/1\nmode: record\nruns: [{lock: ./env.lock, ${entry.replace(/, \}$/, "}")}]\n`;
}

describe("the campaign file", () => {
  it("reads a record campaign with its matrix, defaults and paths against the file's directory", () => {
    const c = parse(`${RECORD}matrix:\n  - set: /run/steps/1/data\n    values: ["a\\n", "b\\n"]\nrepeat: 2\nresources: {cpus: 3}\n`);
    assert.equal(c.mode, "record");
    assert.deepEqual(c.runs, [{ kind: "spec", path: "/tmp/c/hello.yaml" }]);
    assert.deepEqual(c.matrix, [{ set: "/run/steps/1/data", values: ["a\n", "b\n"] }]);
    assert.equal(c.repeat, 2);
    assert.equal(c.retries, 1);
    assert.deepEqual(c.resources, { cpus: 3, memoryMiB: 2048, timeMinutes: 30 });
  });

  it("refuses unknown fields, duplicate keys and aliases, each with its pointer (controls: the same file without them reads)", () => {
    assertCode(() => parse(`${RECORD}bogus: 1\n`), "MODEL_UNKNOWN_FIELD", "/bogus");
    assertCode(() => parse(`${RECORD}repeat: 1\nrepeat: 2\n`), "JSON_DUPLICATE_KEY");
    assertCode(() => parse(`${RECORD}matrix:\n  - set: /run/x\n    values: &v [1]\n`), "YAML_UNSUPPORTED");
    assertCode(() => parse(`${RECORD}matrix:\n  - set: /run/x\n    values: [1]\n    extra: 2\n`), "MODEL_UNKNOWN_FIELD", "/matrix/0/extra");
    assert.equal(parse(`${RECORD}repeat: 1\n`).repeat, 1);
  });

  it("refuses a matrix that writes outside the run section or argv, and a matrix on a replay", () => {
    assertCode(() => parse(`${RECORD}matrix:\n  - set: /source/binary/path\n    values: [./other]\n`), "CAMPAIGN_INVALID", "/matrix/0/set");
    assertCode(
      () => parse("schema: cairn.campaign/1\nmode: replay\nruns: [{run: ./r}]\nmatrix:\n  - set: /run/x\n    values: [1]\n"),
      "CAMPAIGN_INVALID",
      "/matrix",
    );
    assertCode(() => parse("schema: cairn.campaign/1\nmode: replay\nruns: [{spec: ./s.yaml}]\n"), "CAMPAIGN_INVALID", "/runs/0/spec");
    assert.equal(parse(`${RECORD}matrix:\n  - set: /source/binary/args/0\n    values: [x]\n`).matrix.length, 1);
  });

  it("bounds the expansion by named limits from the counts, before a point is built (control: at the limit)", () => {
    const axis = (n: number) => `  - set: /run/a${n}\n    values: [${Array.from({ length: 100 }, (_, i) => i).join(", ")}]\n`;
    const e = assertCode(() => parse(`${RECORD}matrix:\n${axis(1)}${axis(2)}${axis(3)}`), "LIMIT_EXCEEDED", "/matrix");
    assert.match(e.message, /campaign\.matrix-points/);
    assert.equal(parse(`${RECORD}matrix:\n${axis(1)}${axis(2)}`).matrix.length, 2); // 10,000 points: at the limit
    const t = assertCode(() => parse(`${RECORD}matrix:\n${axis(1)}${axis(2)}repeat: 2\n`), "LIMIT_EXCEEDED", "/runs");
    assert.match(t.message, /campaign\.tasks/);
    assert.equal(CAMPAIGN_LIMITS["campaign.tasks"], 10_000);
    assertCode(() => parse(`${RECORD}repeat: 1001\n`), "LIMIT_EXCEEDED", "/repeat");
  });

  it("reads bundle entries (a file made absolute, a registry reference as written) (control: a bundle in a record campaign is refused)", () => {
    const ref = `oci://127.0.0.1:5000/runs/x@sha256:${"a".repeat(64)}`;
    const c = parse(`schema: cairn.campaign/1\nmode: replay\nruns: [{bundle: ./r.cairn}, {bundle: "${ref}"}]\n`);
    assert.deepEqual(c.runs, [
      { kind: "bundle", path: "/tmp/c/r.cairn" },
      { kind: "bundle", path: ref },
    ]);
    assertCode(() => parse("schema: cairn.campaign/1\nmode: record\nruns: [{bundle: ./r.cairn}]\n"), "CAMPAIGN_INVALID", "/runs/0/bundle");
  });

  it("reads a lock entry with its policy, paths against the file's directory, user and workdir defaulted", () => {
    const c = parse(`${RECORD.replace("]\n", `, ${LOCK_ENTRY}]\n`)}`);
    assert.deepEqual(c.runs[1], {
      kind: "lock",
      path: "/tmp/c/env.lock",
      policy: {
        pub: "/tmp/c/lock.pub",
        registry: ["/tmp/c/registry"],
        base: "rootfs:/tmp/c/rootfs",
        cmd: ["/bin/hello", "x"],
        user: "1000:1000",
        workdir: "/",
      },
    });
    const two = parse(
      lockCampaign('registry: [./r1, "oci://127.0.0.1:5000/layers"], base: "oci:./img@sha256:' + "b".repeat(64) + '", user: "7:7", workdir: /tmp'),
    );
    assert.deepEqual(two.runs[0]!.kind === "lock" && two.runs[0]!.policy, {
      pub: "/tmp/c/lock.pub",
      registry: ["/tmp/c/r1", "oci://127.0.0.1:5000/layers"],
      base: `oci:/tmp/c/img@sha256:${"b".repeat(64)}`,
      cmd: ["/bin/hello", "x"],
      user: "7:7",
      workdir: "/tmp",
    });
  });

  it("refuses a lock entry with an unknown or missing field, a host base, in a replay or under a matrix, each named (control: the entry reads)", () => {
    assertCode(() => parse(lockCampaign("bogus: 1")), "MODEL_UNKNOWN_FIELD", "/runs/0/bogus");
    assertCode(() => parse(lockCampaign("spec: ./x.yaml")), "MODEL_UNKNOWN_FIELD", "/runs/0/spec");
    for (const field of ["pub", "registry", "base", "cmd"]) {
      const e = assertCode(() => parse(lockCampaign("", field)), "CAMPAIGN_INVALID");
      assert.ok(e.issues.some((i) => i.path === `/runs/0/${field}`) || e.path === `/runs/0/${field}`, `${field}: ${e.message}`);
    }
    assertCode(() => parse(lockCampaign("", "base").replace("}]", ", base: host}]")), "CAMPAIGN_INVALID", "/runs/0/base");
    assertCode(() => parse(lockCampaign("", "base").replace("}]", ", base: oci:./img}]")), "CAMPAIGN_INVALID", "/runs/0/base");
    assertCode(() => parse(lockCampaign("", "cmd").replace("}]", ", cmd: []}]")), "CAMPAIGN_INVALID", "/runs/0/cmd");
    assertCode(() => parse(lockCampaign("", "registry").replace("}]", ", registry: []}]")), "CAMPAIGN_INVALID", "/runs/0/registry");
    assertCode(() => parse(lockCampaign().replace("mode: record", "mode: replay")), "CAMPAIGN_INVALID", "/runs/0/lock");
    const m = assertCode(() => parse(`${lockCampaign()}matrix:\n  - set: /run/x\n    values: [1]\n`), "CAMPAIGN_INVALID", "/matrix");
    assert.match(m.message, /lock entry has neither/);
    assert.equal(parse(lockCampaign()).runs[0]!.kind, "lock");
    assert.equal(parse(`${RECORD}matrix:\n  - set: /run/x\n    values: [1]\n`).matrix.length, 1);
  });

  it("refuses a campaign file that is not a regular file", () => {
    assertCode(() => readCampaignFile("/dev/null"), "CAMPAIGN_INVALID");
  });
});

describe("expansion into tasks named by identity", { skip: GCC_SKIP }, () => {
  it("a 2x2 matrix gives four tasks, named the same every time, each name covering its point's run section", async () => {
    const dir = helloDir();
    const file = writeCampaign(
      dir,
      `${RECORD}matrix:\n  - set: /run/steps/1/data\n    values: ["a\\n", "b\\n"]\n  - set: /run/expect/0/exit-code\n    values: [0, 1]\n`,
    );
    const opts = { storeDir: join(dir, "store"), cairnVersion: "test" };
    const a = await expandCampaign(readCampaignFile(file), opts);
    const b = await expandCampaign(readCampaignFile(file), opts);
    assert.equal(a.tasks.length, 4);
    assert.equal(new Set(a.tasks.map((t) => t.id)).size, 4);
    assert.deepEqual(
      a.tasks.map((t) => t.id),
      b.tasks.map((t) => t.id),
    );
    assert.deepEqual(
      a.tasks.map((t) => t.origin.point),
      [
        ["a\n", 0],
        ["a\n", 1],
        ["b\n", 0],
        ["b\n", 1],
      ],
    );
    for (const t of a.tasks) {
      assert.equal(t.id, taskName(t.identity));
      assert.equal(t.identity.mode, "record");
      if (t.identity.mode === "record") assert.deepEqual(JSON.parse(JSON.stringify(t.identity.run)).steps[1].data, t.origin.point?.[0]);
    }
    // the run section is not in the workload identity: every point runs the same workload
    assert.equal(new Set(a.tasks.map((t) => (t.identity.mode === "record" ? t.identity.workload.workload : ""))).size, 1);
    // the plan digest covers the names: the same file gives the same plan
    assert.equal(makePlan(readCampaignFile(file), a).plan, makePlan(readCampaignFile(file), b).plan);
  });

  it("points that give the same task collapse into one and are listed; an argv axis changes the workload identity", async () => {
    const dir = helloDir();
    const opts = { storeDir: join(dir, "store"), cairnVersion: "test" };
    const same = await expandCampaign(
      readCampaignFile(writeCampaign(dir, `${RECORD}matrix:\n  - set: /run/steps/1/data\n    values: ["a\\n", "a\\n", "b\\n"]\n`)),
      opts,
    );
    assert.equal(same.tasks.length, 2);
    assert.deepEqual(same.collapsed, [{ run: 0, point: ["a\n"], repeat: 0, same_as: same.tasks[0]!.id }]);
    const argv = await expandCampaign(readCampaignFile(writeCampaign(dir, `${RECORD}matrix:\n  - set: /source/binary/args/0\n    values: [x, y]\n`)), opts);
    const w = argv.tasks.map((t) => (t.identity.mode === "record" ? t.identity.workload.launch : ""));
    assert.notEqual(w[0], w[1]);
    // repeat: tasks that differ only in the repeat index
    const rep = await expandCampaign(readCampaignFile(writeCampaign(dir, `${RECORD}repeat: 3\n`)), opts);
    assert.deepEqual(
      rep.tasks.map((t) => t.identity.repeat),
      [0, 1, 2],
    );
  });

  it("the points' specs together are bounded by campaign.plan-bytes while they are built (control: within it)", async () => {
    const dir = helloDir();
    const file = writeCampaign(dir, `${RECORD}matrix:\n  - set: /run/steps/1/data\n    values: ["a\\n", "b\\n", "c\\n"]\n`);
    const opts = { storeDir: join(dir, "store"), cairnVersion: "test" };
    const one = Buffer.byteLength(`${JSON.stringify((await expandCampaign(readCampaignFile(file), opts)).tasks[0]!.input)}`);
    const e = await assertCodeAsync(() => expandCampaign(readCampaignFile(file), { ...opts, maxPlanBytes: one * 2 }), "LIMIT_EXCEEDED", "/matrix");
    assert.match(e.message, /campaign\.plan-bytes/);
    assert.equal((await expandCampaign(readCampaignFile(file), { ...opts, maxPlanBytes: one * 4 })).tasks.length, 3);
  });

  it("a point whose spec does not validate is refused naming the entry and the point, before anything runs (control: a valid value)", async () => {
    const dir = helloDir();
    const opts = { storeDir: join(dir, "store"), cairnVersion: "test" };
    const bad = writeCampaign(dir, `${RECORD}matrix:\n  - set: /run/steps/1/action\n    values: [write-stdin, explode]\n`);
    const e = await assertCodeAsync(() => expandCampaign(readCampaignFile(bad), opts), "CAMPAIGN_INVALID", "/runs/0/spec");
    assert.match(e.message, /explode/);
    const missing = writeCampaign(dir, `${RECORD}matrix:\n  - set: /run/nothere/0\n    values: [1]\n`);
    await assertCodeAsync(() => expandCampaign(readCampaignFile(missing), opts), "CAMPAIGN_INVALID", "/matrix/0/set");
    const good = writeCampaign(dir, `${RECORD}matrix:\n  - set: /run/steps/1/action\n    values: [write-stdin]\n`);
    assert.equal((await expandCampaign(readCampaignFile(good), opts)).tasks.length, 1);
  });

  it("a spec naming a lockfile is refused saying why, before anything runs (control: the binary spec beside it)", async () => {
    const dir = helloDir();
    const opts = { storeDir: join(dir, "store"), cairnVersion: "test" };
    writeFileSync(join(dir, "env.yaml"), "schema: cairn.workload/1\nsource:\n  lockfile: {path: ./env.lock, cmd: [/bin/true]}\n");
    const f = writeCampaign(dir, "schema: cairn.campaign/1\nmode: record\nruns: [{spec: ./hello.yaml}, {spec: ./env.yaml}]\n");
    const e = await assertCodeAsync(() => expandCampaign(readCampaignFile(f), opts), "CAMPAIGN_INVALID", "/runs/1/spec");
    assert.match(e.message, /names a lockfile .*policy .*lock: entry/);
    assert.equal((await expandCampaign(readCampaignFile(writeCampaign(dir, RECORD)), opts)).tasks.length, 1);
  });
});

describe("lock entries: verified and exported when the plan is made, named by the exported workload", () => {
  const setup = async () => {
    const f = await pinnedFixture();
    const { pubPath } = writeKeyPair(join(f.root, "lock"), LOCK_KEY);
    const other = writeKeyPair(join(f.root, "other"), REGISTRY_KEY).pubPath;
    const opts = { storeDir: join(f.root, "store"), cairnVersion: "test", now: NOW, env: {} };
    const campaign = (entry: string, name = "campaign.yaml") => writeCampaign(f.root, `schema: cairn.campaign/1\nmode: record\nruns:\n${entry}`, name);
    const entry = (extra = "", pub = pubPath) =>
      `  - {lock: ./env.lock, pub: ${pub}, registry: ./registry, base: rootfs:./rootfs, cmd: [/opt/hello/1.0/bin/hello]${extra}}\n`;
    return { f, opts, campaign, entry, other };
  };

  it("a lock entry's task name covers the workload the exported image assembles to, the same every time; another command is another task, the same entry twice one", async () => {
    const { f, opts, campaign, entry } = await setup();
    const e = await expandCampaign(readCampaignFile(campaign(entry() + entry() + entry().replace("hello/1.0/bin/hello", "tools/2.0/bin/tools"))), opts);
    assert.equal(e.tasks.length, 2);
    assert.equal(e.collapsed.length, 1);
    const [t, u] = e.tasks;
    assert.ok(t !== undefined && u !== undefined && t.identity.mode === "record" && u.identity.mode === "record");
    assert.deepEqual(t.input, {
      lock: f.lockPath,
      policy: {
        pub: join(f.root, "lock.pub"),
        registry: [join(f.root, "registry")],
        base: `rootfs:${f.rootfs}`,
        cmd: ["/opt/hello/1.0/bin/hello"],
        user: "1000:1000",
        workdir: "/",
      },
    });
    // the oracle: the lockfile exported directly (strata's exportLock) and the image assembled from a spec written here
    const out = join(f.root, "direct");
    mkdirSync(out);
    const x = await exportFixture(f, join(out, "image"), { launch: { argv: ["/opt/hello/1.0/bin/hello"], user: "1000:1000", workdir: "/" } });
    writeFileSync(join(out, "w.yaml"), `schema: cairn.workload/1\nsource:\n  oci: {layout: ./image, manifest: "${x.layout.manifest.digest}"}\n`);
    const a = await assembleWorkload({ specPath: join(out, "w.yaml"), storeDir: join(f.root, "store2"), cairnVersion: "test" });
    const w = a.identities;
    assert.deepEqual(t.identity.workload, { workload: w.workload, source: w.source, fs: w.fs, launch: w.launch });
    assert.equal(t.identity.run, null);
    assert.equal(t.id, taskName(t.identity));
    assert.notEqual(u.identity.workload.launch, t.identity.workload.launch);
    assert.equal(u.identity.workload.fs, t.identity.workload.fs, "the same image, another command");
    const again = await expandCampaign(readCampaignFile(campaign(entry())), opts);
    assert.equal(again.tasks[0]!.id, t.id);
    // the plan keeps the policy, and reads it back
    const plan = makePlan(readCampaignFile(campaign(entry())), again);
    const dir = join(f.root, "results");
    mkdirSync(dir);
    writePlan(dir, plan);
    assert.deepEqual(readPlan(dir)!.tasks[0]!.input, t.input);
  });

  it("a lockfile that does not verify under the entry's policy is refused naming the entry, before anything runs (control: the right key)", async () => {
    const { opts, campaign, entry, other } = await setup();
    const wrongKey = await assertCodeAsync(() => expandCampaign(readCampaignFile(campaign(entry("", other))), opts), "CAMPAIGN_INVALID", "/runs/0/lock");
    assert.match(wrongKey.message, /LOCK_SIGNATURE|signature|signed/i);
    const noBase = entry().replace("rootfs:./rootfs", "rootfs:./registry");
    await assertCodeAsync(() => expandCampaign(readCampaignFile(campaign(noBase)), opts), "CAMPAIGN_INVALID", "/runs/0/lock");
    const bad = entry().replace("cmd: [/opt/hello/1.0/bin/hello]", "cmd: [relative/prog]");
    await assertCodeAsync(() => expandCampaign(readCampaignFile(campaign(bad)), opts), "CAMPAIGN_INVALID", "/runs/0/lock");
    assert.equal((await expandCampaign(readCampaignFile(campaign(entry())), opts)).tasks.length, 1);
  });

  it("an edited plan whose lock task's policy is not whole is refused (control: the plan as written)", async () => {
    const { f, opts, campaign, entry } = await setup();
    const file = readCampaignFile(campaign(entry()));
    const dir = join(f.root, "results");
    mkdirSync(dir);
    writePlan(dir, makePlan(file, await expandCampaign(file, opts)));
    assert.equal(readPlan(dir)!.tasks.length, 1);
    const text = readFileSync(join(dir, "campaign.json"), "utf8");
    writeFileSync(join(dir, "campaign.json"), text.replace(/"user": "1000:1000",?/, ""));
    assertCode(() => readPlan(dir), "CAMPAIGN_INVALID");
  });
});
