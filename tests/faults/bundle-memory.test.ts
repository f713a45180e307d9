/**
 * Opening a replay bundle holds at most one member's bytes, never the bundle
 * (issue 16, item 2: the 1 GiB budget at bundle.max_bytes, 4 GiB): a bundle
 * whose store object is LARGE_MIB of random bytes is opened in a child
 * process that reports its own peak RSS (VmHWM, tests/helpers/peak-memory.ts). The bundle has no
 * index, so it is refused (BUNDLE_INVALID) only after every member streamed
 * through the gate: the peak covers the whole read. It must stay below the
 * baseline (a child that loads the same modules) plus BUDGET_OVER_BASE_MIB.
 * Control: the same measurement of a child that reads the bundle whole is
 * above that budget, so the measurement catches a process holding it.
 */
import assert from "node:assert/strict";
import { createCipheriv, createHash, randomBytes } from "node:crypto";
import { closeSync, openSync, writeSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { tarChunks, type TarStreamEntry } from "../../src/tree/index.ts";
import { peakInChild } from "../helpers/peak-memory.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { tempDir } from "../strata/fixtures.ts";

const MiB = 1024 * 1024;
/** Large enough that holding it is far above the budget. */
const LARGE_MIB = 256;
const BUDGET_OVER_BASE_MIB = 150;
const work = tempDir("cairn-bundle-mem-");
const src = join(PROJECT_ROOT, "src");

/** Runs `body` in a child with `src` and `bundle` bound; returns its outcome and peak RSS in MiB. */
function measure(name: string, bundle: string, body: string): { outcome: string; rssMiB: number } {
  return peakInChild(
    work,
    name,
    `const src = ${JSON.stringify(src)};
const bundle = ${JSON.stringify(bundle)};
const vm = await import(src + "/vm/index.ts");
const core = await import(src + "/core/index.ts");`,
    body,
  );
}

/**
 * A bundle tar with one store object of LARGE_MIB random bytes, named by its
 * digest; no index. Written a MiB at a time from a seeded stream that is
 * generated twice (once to hash, once to write), so this process never holds
 * it (measured by VmHWM or not, a small parent keeps the measurement clean).
 */
function bigBundle(): string {
  const chunks = function* (): Generator<Buffer> {
    const seed = randomBytes(32);
    for (let i = 0; i < LARGE_MIB; i++) {
      const c = createCipheriv("chacha20", seed, Buffer.alloc(16, 0).fill(i & 0xff, 0, 4));
      yield c.update(Buffer.alloc(MiB));
    }
  };
  return writeBundle(chunks);
}

function writeBundle(chunks: () => Iterable<Buffer>): string {
  const h = createHash("sha256");
  for (const c of chunks()) h.update(c);
  const entries: TarStreamEntry[] = [
    { type: "dir", path: "store", mode: 0o755 },
    { type: "dir", path: "store/objects", mode: 0o755 },
    { type: "file", path: `store/objects/${h.digest("hex")}`, mode: 0o644, content: { size: LARGE_MIB * MiB, chunks } },
  ];
  const path = join(work, "big.cairn");
  const fd = openSync(path, "w", 0o600);
  for (const c of tarChunks(entries)) writeSync(fd, c);
  closeSync(fd);
  return path;
}

describe(`a replay bundle with a ${LARGE_MIB} MiB member opens within baseline + ${BUDGET_OVER_BASE_MIB} MiB`, () => {
  it("the whole bundle streams through the gate and is refused for its missing index, the peak within the budget; control: reading it whole is above", () => {
    const bundle = bigBundle();
    const baseline = measure("baseline", bundle, "void vm; void core;").rssMiB;
    const opened = measure("open", bundle, "await vm.openBundle(bundle);");
    assert.equal(opened.outcome, "BUNDLE_INVALID", "refused for the missing index, after the read");
    assert.ok(opened.rssMiB < baseline + BUDGET_OVER_BASE_MIB, `openBundle peaked at ${opened.rssMiB} MiB (baseline ${baseline} MiB)`);
    const whole = measure("whole", bundle, 'core.readFileBounded(bundle, 1 << 30, "bundle.max_bytes");');
    assert.equal(whole.outcome, "accepted");
    assert.ok(
      whole.rssMiB > baseline + BUDGET_OVER_BASE_MIB,
      `control: the bundle read whole peaks at ${whole.rssMiB} MiB (baseline ${baseline}, open ${opened.rssMiB})`,
    );
    process.stdout.write(`# baseline ${baseline} MiB, openBundle ${opened.rssMiB} MiB, read whole ${whole.rssMiB} MiB\n`);
  });
});
