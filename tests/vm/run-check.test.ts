/**
 * `cairn workload check` checks what `cairn run` will check (issue 31,
 * case 15): a Debian minbase image passed check ("assembles as the spec
 * stands") and was then refused by run at `vm.image-bytes`, because check
 * never looked at the run section or the guest's size. Check now applies
 * run's own functions (vm/run-check.ts: parseScenario, sizeGuest, the
 * overlay's rules), so each case here fails check with exactly the code,
 * path and message run fails with, before QEMU; the control passes both,
 * and its run records and passes.
 *
 * The image is small (the probe plus 2 MiB of data, generated here); the
 * spec's `run.limits.image-bytes` stands in for the default a big image
 * exceeds. Each run section is partial (no steps): the default steps fill in.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { CairnError } from "../../src/core/index.ts";
import { checkWorkloadRun, recordRun } from "../../src/vm/index.ts";
import { writeOciLayout } from "../workload/fixtures/oci-writer.ts";
import { dir, file } from "../workload/fixtures/tar-writer.ts";
import { testKit, VM_SKIP } from "./fixtures/kit.ts";
import { probeBytes } from "./fixtures/programs.ts";

const MiB = 1024 * 1024;
const DATA = 2 * MiB;

describe("workload check refuses what run refuses, before launch", { skip: VM_SKIP }, () => {
  let root: string;
  let manifest: string;
  let treeBytes: number;
  before(async () => {
    await testKit();
    root = mkdtempSync(join(tmpdir(), "cairn-run-check-"));
    const probe = probeBytes("static");
    treeBytes = probe.length + DATA;
    manifest = writeOciLayout(join(root, "layout"), {
      layers: [
        { entries: [dir("./", { mode: 0o755 }), dir("bin", { mode: 0o755 }), file("bin/probe", probe, { mode: 0o755 }), file("data", randomBytes(DATA))] },
      ],
      config: { Entrypoint: ["/bin/probe"], WorkingDir: "/", User: "1000:1000" },
    }).manifestDigest;
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  function spec(name: string, run: object): string {
    const path = join(root, `${name}.json`);
    writeFileSync(path, JSON.stringify({ schema: "cairn.workload/1", source: { oci: { layout: "layout", manifest } }, run }));
    return path;
  }

  async function runRefusal(specPath: string, name: string): Promise<CairnError> {
    const runsDir = join(root, `runs-${name}`);
    try {
      await recordRun({ input: specPath, storeDir: join(root, "store"), runsDir, kit: await testKit(), cairnVersion: "test" });
    } catch (e) {
      assert.ok(e instanceof CairnError, String(e));
      const left = existsSync(runsDir) ? readdirSync(runsDir).filter((d) => d !== "cairn-runs.json") : [];
      assert.deepEqual(left, [], "refused before launch: no run directory left");
      return e;
    }
    assert.fail(`${name}: run did not refuse`);
  }

  const cases: Array<[string, object, string | (() => string), RegExp]> = [
    // the case: the tree is over vm.image-bytes (there the RAM-sized default; here a spec's number), in an initramfs
    ["tree over vm.image-bytes", { limits: { "image-bytes": MiB } }, "/tree", /limit vm\.image-bytes exceeded/],
    // a disk root: the tree fits exactly, the root disk (tree plus metadata) does not
    ["root disk over vm.image-bytes", { root: "disk", "limits-exact": true }, "/guest_image/disk", /limit vm\.image-bytes exceeded/],
    // the directory run.network.http serves is read by run before the guest is built: a missing one
    ["http root missing", { network: { http: { port: 80, root: "./no-such-site" } } }, () => join(root, "no-such-site"), /no-such-site/],
    // the run section itself: an initramfs root cannot be given more than 1 GiB
    ["initramfs asked for 2 GiB", { root: "initramfs", limits: { "image-bytes": 2 * 1024 * MiB } }, "/run/limits/image-bytes", /initramfs root/],
  ];

  for (const [name, unsafeRun, path, message] of cases) {
    it(`${name}: check and run refuse alike (code, path, message)`, async () => {
      const { "limits-exact": exact, ...rest } = unsafeRun as { "limits-exact"?: boolean };
      const run = exact === true ? { ...rest, limits: { "image-bytes": treeBytes } } : rest;
      const specPath = spec(name.replaceAll(" ", "-"), run);
      const checked = await checkWorkloadRun({ specPath });
      assert.equal(checked.problemCount, 1, JSON.stringify(checked.problems));
      const p = checked.problems[0]!;
      assert.equal(checked.admissible, false, "no policy admits a size");
      const refused = await runRefusal(specPath, name.replaceAll(" ", "-"));
      assert.equal(p.path, typeof path === "string" ? path : path());
      assert.match(p.message, message);
      assert.deepEqual([p.code, p.path, p.message], [refused.code, refused.path, refused.message], "check says exactly what run says");
    });
  }

  it("control: with room in vm.image-bytes check finds nothing and run records and passes (a partial run section: the default steps)", async () => {
    const specPath = spec("roomy", { limits: { "image-bytes": 64 * MiB } });
    const checked = await checkWorkloadRun({ specPath });
    assert.deepEqual(checked.problems, []);
    const r = await recordRun({
      input: specPath,
      storeDir: join(root, "store"),
      runsDir: join(root, "runs-roomy"),
      kit: await testKit(),
      cairnVersion: "test",
    });
    assert.equal(r.evaluation.status, "passed");
    assert.equal(r.manifest.vm.root_disk, null, "2 MiB of tree stays in the initramfs");
    assert.deepEqual(
      r.evaluation.assertions.map((a) => [a.check, a.ok]),
      [["exit-code", true]],
      "the default expectation: exit code 0",
    );
  });
});
