/**
 * A real Debian 12 root on the disk root (issue 9, "done when"):
 * `mmdebstrap --variant=minbase --include=python3-minimal --skip=output/dev
 * bookworm` (as root, or in unshare mode as a user), its tarball used as
 * the one layer of an OCI layout written by the test fixtures' writer (with
 * a platform and the launch in the config, no `User`: it runs as 65534:65534), assembled
 * with two documented policies (`hardlinks: copy` for perl's hard links,
 * `setid: strip` for su, passwd, mount and friends) and
 * `run.limits.image-bytes` raised, then recorded with `cairn`'s library and
 * replayed twice:
 *
 *   python3 -c 'import hashlib; print(hashlib.sha256(b"x").hexdigest())'
 *
 *   node --import tsx bench/root-disk/minbase.ts [--tar=FILE]
 *
 * Without --tar the tarball is built once into bench/.work/minbase.tar
 * (needs the Debian archive; about 90 s here). Not part of the test suite:
 * it needs a mirror and takes minutes (tests/vm/debian-root.test.ts is the
 * suite's smaller Debian root). An upstream layout written by umoci as it
 * is cannot be assembled yet: it has no `platform` on its descriptor and no
 * `User` (issue 9, item 3).
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { recordRun, replayRun } from "../../src/vm/index.ts";
import { testKit } from "../../tests/vm/fixtures/kit.ts";
import { MEDIA, writeOciLayout } from "../../tests/workload/fixtures/oci-writer.ts";

const MiB = 1024 * 1024;
const EXPECTED = "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"; // sha256("x"), as sha256sum prints it
let tar = process.argv.find((a) => a.startsWith("--tar="))?.slice("--tar=".length);
if (tar === undefined) {
  const work = join(import.meta.dirname, "..", ".work");
  tar = join(work, "minbase.tar");
  if (!existsSync(tar)) {
    mkdirSync(work, { recursive: true });
    const mode = process.getuid?.() === 0 ? "root" : "unshare";
    const r = spawnSync("mmdebstrap", [`--mode=${mode}`, "--variant=minbase", "--include=python3-minimal", "--skip=output/dev", "bookworm", `${tar}.tmp`], {
      stdio: "inherit",
    });
    if (r.status !== 0) throw new Error("mmdebstrap failed (apt-get install mmdebstrap; the Debian archive must be reachable)");
    spawnSync("mv", [`${tar}.tmp`, tar]);
  }
}
const root = mkdtempSync(join(tmpdir(), "cairn-minbase-"));
const t0 = performance.now();
const img = writeOciLayout(join(root, "layout"), {
  layers: [{ tar: readFileSync(tar), gzip: false, mediaType: MEDIA.layerTar }],
  config: {
    Entrypoint: ["/usr/bin/python3"],
    Cmd: ["-c", "import hashlib; print(hashlib.sha256(b'x').hexdigest())"],
    Env: ["PATH=/usr/local/bin:/usr/bin:/bin"],
    WorkingDir: "/", // no User: the image runs as 65534:65534
  },
});
const spec = {
  schema: "cairn.workload/1",
  source: { oci: { layout: "layout", manifest: img.manifestDigest } },
  policy: { hardlinks: "copy", setid: "strip" },
  run: {
    steps: [{ action: "start" }, { action: "close-stdin" }],
    expect: [{ "exit-code": 0, "stdout-lines": [EXPECTED] }],
    limits: { "image-bytes": 512 * MiB },
  },
};
writeFileSync(join(root, "spec.json"), JSON.stringify(spec));
const layoutS = (performance.now() - t0) / 1000;
const kit = await testKit();
const storeDir = join(root, "store");
const rec = await recordRun({ input: join(root, "spec.json"), storeDir, runsDir: join(root, "runs"), kit, cairnVersion: "bench" });
const disk = rec.manifest.vm.root_disk;
console.log(`layer tar ${(statSync(tar).size / MiB).toFixed(1)} MiB, layout written in ${layoutS.toFixed(1)} s`);
console.log(
  `record: ${rec.manifest.status}; assembly ${(rec.durations.assembleMs / 1000).toFixed(1)} s, guest images ${(rec.durations.imageMs / 1000).toFixed(1)} s, QEMU ${(rec.durations.qemuMs / 1000).toFixed(1)} s; root disk ${disk ? `${(disk.size / MiB).toFixed(1)} MiB` : "none"}, guest RAM ${rec.manifest.vm.memory_mib} MiB, replay log ${(rec.replayLogSize / MiB).toFixed(2)} MiB`,
);
console.log(`stdout: ${readFileSync(join(rec.runDir, "streams", "1.stdout"), "utf8").trim()}`);
for (let i = 1; i <= 2; i++) {
  const r = await replayRun({ runDir: rec.runDir, storeDir, kit });
  console.log(`replay ${i}: ${r.evaluation.outcome === rec.manifest.outcome ? "matches the record" : "DIFFERS"}, QEMU ${(r.qemuMs / 1000).toFixed(1)} s`);
}
