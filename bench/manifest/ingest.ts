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

function time(label: string, fn: () => unknown): number {
  for (let i = 0; i < Math.min(N, 200); i++) fn(); // warm up the JIT
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) fn();
  const perOp = Number(process.hrtime.bigint() - t0) / 1e6 / N;
  console.log(`${label.padEnd(44)} ${perOp.toFixed(4)} ms/op`);
  return perOp;
}

console.log(`file: examples/devcontainer/pinned/devcontainer.json (${bytes.length} bytes), N=${N}, node ${process.version}`);
const peer = time("peer floor: jsonc.parse (lenient, no checks)", () => lenientParse(bytes.toString("utf8")));
const ingest = time("cairn ingest (strict parse → core → address)", () => ingestDevcontainer(parseInputText(decodeUtf8(bytes), file)));
const signed = time("cairn ingest + Ed25519 signature", () => ingestDevcontainer(parseInputText(decodeUtf8(bytes), file), { key }));
console.log(`ratio ingest / peer floor: ${(ingest / peer).toFixed(1)}x; signed / peer floor: ${(signed / peer).toFixed(1)}x`);
