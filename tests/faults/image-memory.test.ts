/**
 * The guest image build holds no file and no image whole (issue 15, item 3):
 * a workload holding one file of LARGE_MIB of random bytes (an OCI layout
 * generated here) is assembled, then, each in a child process, verified and
 * given the images a run builds from its tree: the EROFS root disk (hashed)
 * and the cpio initramfs written to a private file (writeGuestImageFile).
 * The child's peak RSS (VmHWM: its own peak since exec; getrusage's maxRSS
 * would also count this process's resident set at fork) must stay below the
 * baseline (a child that loads the same modules and does nothing) plus
 * BUDGET_OVER_BASE_MIB, well under the file's size. Control: the same
 * measurement of the image written to a sink that keeps its bytes (what the
 * in-memory builder did) is above that budget, so the measurement does
 * catch a process holding the image.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import { peakInChild } from "../helpers/peak-memory.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { tempDir } from "../strata/fixtures.ts";

/** Big enough that holding the file (or the image) is far above the budget, small enough for a few seconds of gzip. */
const LARGE_MIB = 256;
/** What a streamed build may use above the baseline: the verify's chunks and zlib's window, a MiB of the file, the tree. */
const BUDGET_OVER_BASE_MIB = 150;

const work = tempDir("cairn-image-mem-");
const src = join(PROJECT_ROOT, "src");
const fixtures = join(PROJECT_ROOT, "tests", "workload", "fixtures");

/** Runs `body` (TypeScript; `src`, `work`, `fixtures`, `workload`, `vm` bound) in a child; returns its outcome and peak RSS in MiB. */
function measure(name: string, body: string): { outcome: string; rssMiB: number } {
  return peakInChild(
    work,
    name,
    `const src = ${JSON.stringify(src)};
const work = ${JSON.stringify(work)};
const fixtures = ${JSON.stringify(fixtures)};
const workload = await import(src + "/workload/index.ts");
const vm = await import(src + "/vm/index.ts");
const { readFileSync } = await import("node:fs");`,
    body,
  );
}

/** Verifies the workload and writes its images; `sink` names the initramfs's destination (a file, or kept bytes for the control). */
const build = (initramfs: "file" | "kept") => `const w = await workload.openVerifiedWorkload(work + "/spec.lock.json", work + "/store");
const plan = vm.planErofs(w.tree);
await vm.writeErofs(w.tree, w.content, { write() {} }, plan);
const parts = { agent: Buffer.from("agent"), inputs: Buffer.alloc(0), treeManifest: vm.encodeTreeManifest(w.tree), modules: [], tree: w.tree, content: w.content };
${
  initramfs === "file"
    ? `await vm.writeGuestImageFile(parts, work + "/initramfs.img");`
    : `const kept: Buffer[] = [];
const img = await vm.writeGuestImage(parts, { write: (c) => void kept.push(Buffer.from(c)) });
if (Buffer.concat(kept).length !== img.size) throw new Error("short");`
}`;

describe(`the guest images of a ${LARGE_MIB} MiB file are built within baseline + ${BUDGET_OVER_BASE_MIB} MiB`, () => {
  let baseline = 0;
  before(() => {
    // the layout and the store are made in a child, so this process never holds the file
    const setup = measure(
      "setup",
      `const { randomBytes } = await import("node:crypto");
const { writeManyFilesLayout } = await import(fixtures + "/many-files-layout.ts");
const img = await writeManyFilesLayout(work + "/image", { count: 1, dirs: 1, bytes: () => randomBytes(${LARGE_MIB} * 1024 * 1024) });
const { writeFileSync } = await import("node:fs");
writeFileSync(work + "/spec.json", JSON.stringify({ schema: "cairn.workload/1", source: { oci: { layout: "./image", manifest: img.manifestDigest } } }));
await workload.assembleWorkload({ specPath: work + "/spec.json", storeDir: work + "/store", lockOut: work + "/spec.lock.json", cairnVersion: "test", now: () => new Date(0) });`,
    );
    assert.equal(setup.outcome, "accepted");
    baseline = measure("baseline", "void workload; void vm;").rssMiB;
  });

  it("the root disk hashed and the initramfs streamed to a private file stay within the budget; control: the initramfs kept in memory is above it", () => {
    const streamed = measure("streamed", build("file"));
    assert.equal(streamed.outcome, "accepted");
    const kept = measure("kept", build("kept"));
    assert.equal(kept.outcome, "accepted");
    console.log(`# image build, ${LARGE_MIB} MiB file: streamed ${streamed.rssMiB} MiB, initramfs kept in memory ${kept.rssMiB} MiB, baseline ${baseline} MiB`);
    assert.ok(
      streamed.rssMiB < baseline + BUDGET_OVER_BASE_MIB,
      `the streamed build peaked at ${streamed.rssMiB} MiB (budget ${baseline + BUDGET_OVER_BASE_MIB})`,
    );
    assert.ok(kept.rssMiB > baseline + BUDGET_OVER_BASE_MIB, `control: the image kept in memory peaked at ${kept.rssMiB} MiB`);
  });
});
