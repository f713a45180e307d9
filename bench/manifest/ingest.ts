/**
 * Ingest time of a typical devcontainer.json (the bundled pinned example),
 * averaged over N ingests, side by side with the lenient `jsonc.parse` the
 * devcontainer CLI reads the same file with (the peer's floor: it does no
 * checking, normalization or hashing), reported as a ratio.
 *
 *   node --import tsx bench/manifest/ingest.ts [N]
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parse as lenientParse } from "jsonc-parser";
import { decodeUtf8, generateSigningKey } from "../../src/core/index.ts";
import { ingestDevcontainer } from "../../src/manifest/index.ts";
import { parseInputText } from "../../src/manifest/read.ts";

const N = Number(process.argv[2] ?? 1000);
const file = fileURLToPath(new URL("../../examples/devcontainer/pinned/devcontainer.json", import.meta.url));
const bytes = readFileSync(file);
const key = generateSigningKey();

const ROUNDS = 7;

/** Milliseconds per op for one batch of N calls. */
function batch(fn: () => unknown): number {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) fn();
  return Number(process.hrtime.bigint() - t0) / 1e6 / N;
}

/**
 * Runs the variants interleaved (A B C, A B C, …) so that load from other
 * processes hits all of them alike, and reports the median round of each.
 */
function compare(variants: [string, () => unknown][]): number[] {
  for (const [, fn] of variants) for (let i = 0; i < 200; i++) fn(); // warm up the JIT
  const rounds: number[][] = variants.map(() => []);
  for (let r = 0; r < ROUNDS; r++)
    variants.forEach(([, fn], i) => {
      rounds[i]!.push(batch(fn));
    });
  return variants.map(([label], i) => {
    const sorted = [...rounds[i]!].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)]!;
    console.log(`${label.padEnd(46)} ${median.toFixed(4)} ms/op (median of ${ROUNDS} rounds of ${N}; min ${sorted[0]!.toFixed(4)})`);
    return median;
  });
}

console.log(`file: examples/devcontainer/pinned/devcontainer.json (${bytes.length} bytes), N=${N}, node ${process.version}`);
const [peer, ingest, signed] = compare([
  ["peer floor: jsonc.parse (lenient, no checks)", () => lenientParse(bytes.toString("utf8"))],
  ["cairn ingest (strict parse → core → address)", () => ingestDevcontainer(parseInputText(decodeUtf8(bytes), file))],
  ["cairn ingest + Ed25519 signature", () => ingestDevcontainer(parseInputText(decodeUtf8(bytes), file), { key })],
]) as [number, number, number];
console.log(`ratio ingest / peer floor: ${(ingest / peer).toFixed(1)}x; signed / peer floor: ${(signed / peer).toFixed(1)}x`);
