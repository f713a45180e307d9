/**
 * A root built from Debian's own packages runs on the disk root (issue 9,
 * "done when", the busybox build): base-files and busybox-static as
 * downloaded by apt-get (checked by the digest apt's index names), their
 * data tars used as two OCI layers as they are, plus a layer of four applet
 * links (Debian's busybox-static installs none), assembled with one
 * documented policy (`setid: strip`: base-files' /var/local is setgid), run
 * as `busybox sh -c 'cat /etc/debian_version; ls /usr/bin | wc -l'` on a
 * root disk, recorded, and replayed twice with the same outcome. The
 * expected lines come from the package tars themselves, read on the host.
 * Control: without the policy the same layout is refused.
 */
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { describe, it } from "node:test";
import tarStream from "tar-stream";
import { isCairnError } from "../../src/core/index.ts";
import { recordRun, replayRun } from "../../src/vm/index.ts";
import { needs } from "../helpers/prerequisites.ts";
import { MEDIA, writeOciLayout } from "../workload/fixtures/oci-writer.ts";
import { symlink } from "../workload/fixtures/tar-writer.ts";
import { debianDataTar, debianMissing, debianPackage } from "./fixtures/debian.ts";
import { testKit, VM_SKIP } from "./fixtures/kit.ts";

const SKIP = VM_SKIP || needs(debianMissing());
const SCRIPT = "cat /etc/debian_version; ls /usr/bin | wc -l";
/** Debian's busybox-static installs no applet links and its shell finds applets only on PATH: a third layer, written here, links the four the script uses (as `busybox --install -s` would). */
const APPLETS = ["cat", "ls", "sh", "wc"];

/** Member names (without "./") and the bytes of the files asked for. */
async function readTar(tar: Buffer, want: string[]): Promise<{ names: string[]; files: Map<string, Buffer> }> {
  const names: string[] = [];
  const files = new Map<string, Buffer>();
  const extract = tarStream.extract();
  const done = new Promise<void>((resolve, reject) => {
    extract.on("entry", (h, stream, next) => {
      const name = h.name.replace(/^\.\//, "").replace(/\/$/, "");
      names.push(name);
      const chunks: Buffer[] = [];
      stream.on("data", (c: unknown) => void chunks.push(c as Buffer));
      stream.on("end", () => {
        if (want.includes(name)) files.set(name, Buffer.concat(chunks));
        next();
      });
    });
    extract.on("finish", resolve);
    extract.on("error", reject);
  });
  Readable.from([tar]).pipe(extract);
  await done;
  return { names, files };
}

describe("a root from Debian packages on the disk root", { skip: SKIP }, () => {
  it("base-files + busybox-static: cat /etc/debian_version and count /usr/bin, recorded and replayed twice", async () => {
    const tars = ["base-files", "busybox-static"].map((p) => debianDataTar(debianPackage(p)));
    const read = await Promise.all(tars.map((t) => readTar(t, ["etc/debian_version"])));
    const version = read[0]!.files.get("etc/debian_version")!.toString("utf8").trim();
    const inUsrBin = new Set([...read.flatMap((r) => r.names.filter((n) => /^usr\/bin\/[^/]+$/.test(n))), ...APPLETS.map((a) => `usr/bin/${a}`)]);
    const root = mkdtempSync(join(tmpdir(), "cairn-debian-"));
    const img = writeOciLayout(join(root, "layout"), {
      layers: [
        ...tars.map((tar) => ({ tar, gzip: false, mediaType: MEDIA.layerTar })),
        { entries: APPLETS.map((a) => symlink(`usr/bin/${a}`, "/bin/busybox")) },
      ],
      config: { Entrypoint: ["/bin/busybox"], Cmd: ["sh", "-c", SCRIPT], Env: ["PATH=/usr/bin:/bin"], WorkingDir: "/", User: "65534:65534" },
    });
    const spec = (policy: object | undefined) => ({
      schema: "cairn.workload/1",
      source: { oci: { layout: "layout", manifest: img.manifestDigest } },
      ...(policy ? { policy } : {}),
      run: {
        root: "disk",
        steps: [{ action: "start" }, { action: "close-stdin" }],
        expect: [{ "exit-code": 0, "stdout-lines": [version, String(inUsrBin.size)] }],
      },
    });
    const kit = await testKit();
    // control: the strict profile refuses base-files' setgid /var/local
    writeFileSync(join(root, "strict.json"), JSON.stringify(spec(undefined)));
    await assert.rejects(
      () => recordRun({ input: join(root, "strict.json"), storeDir: join(root, "store"), runsDir: join(root, "runs"), kit, cairnVersion: "test" }),
      (e: unknown) => isCairnError(e) && e.code === "TAR_SETID",
    );
    writeFileSync(join(root, "spec.json"), JSON.stringify(spec({ setid: "strip" })));
    const storeDir = join(root, "store");
    const rec = await recordRun({ input: join(root, "spec.json"), storeDir, runsDir: join(root, "runs"), kit, cairnVersion: "test" });
    assert.equal(rec.manifest.status, "passed", JSON.stringify(rec.evaluation));
    assert.ok(rec.manifest.vm.root_disk !== null);
    for (let i = 0; i < 2; i++) {
      const r = await replayRun({ runDir: rec.runDir, storeDir, kit });
      assert.equal(r.evaluation.outcome, rec.manifest.outcome);
    }
  });
});
