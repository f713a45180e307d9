/**
 * Limits the process survives (issue 16, item 2): each input kind the issue
 * named, at its default byte limit in its worst shape (many tiny nodes), is
 * refused or accepted within the memory budget of docs/host-safety.md
 * (1 GiB peak RSS for one input), measured in a child process with
 * process.resourceUsage().maxRSS. Before the node-count limits, the YAML
 * lockfile took 4.5 GB and aborted, and the JSON shapes did the same.
 * Controls: the largest documents of each shape the node limits accept
 * parse within the budget too.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { PROJECT_ROOT } from "../helpers/vectors.ts";

const BUDGET_MIB = 1024;
const MiB = 1024 * 1024;

/** Runs `body` (TypeScript, with `src` bound to the sources) in a child; returns its outcome and peak RSS. */
function measure(body: string): { outcome: string; rssMiB: number } {
  const dir = mkdtempSync(join(tmpdir(), "cairn-mem-"));
  const script = join(dir, "probe.mts");
  writeFileSync(
    script,
    `const src = ${JSON.stringify(join(PROJECT_ROOT, "src"))};
process.chdir(${JSON.stringify(dir)});
let outcome = "accepted";
try {
${body}
} catch (e) { outcome = (e as { code?: string }).code ?? "uncoded " + String(e).slice(0, 80); }
process.stdout.write(JSON.stringify({ outcome, rssMiB: Math.round(process.resourceUsage().maxRSS / 1024) }));
`,
  );
  const r = spawnSync(process.execPath, ["--import", "tsx", script], { cwd: PROJECT_ROOT, encoding: "utf8", timeout: 240_000, maxBuffer: 1 << 20 });
  assert.equal(r.status, 0, `the child survived (signal ${r.signal}; ${r.stderr.slice(-400)})`);
  return JSON.parse(r.stdout) as { outcome: string; rssMiB: number };
}

/** A JSON list of `{}` of about `bytes` bytes. */
const jsonObjects = (bytes: number): string => `"[" + "{},".repeat(${Math.floor(bytes / 3) - 1}) + "{}]"`;

const CASES: ReadonlyArray<{ name: string; expect: string; body: string }> = [
  {
    name: "environment lockfile: 16 MiB (lock.max_bytes) of YAML [a,a,...]",
    expect: "LIMIT_EXCEEDED",
    body: `const { readLockfile } = await import(src + "/strata/index.ts");
const { writeFileSync } = await import("node:fs");
writeFileSync("lock.yaml", "[" + "a,".repeat(${Math.floor((16 * MiB) / 2) - 2}) + "a]");
readLockfile("lock.yaml");`,
  },
  {
    name: "registry envelope: 60 MiB (under registry.max_envelope_bytes) of [{},...]",
    expect: "LIMIT_EXCEEDED",
    body: `const { LocalRegistry } = await import(src + "/strata/index.ts");
const { writeFileSync } = await import("node:fs");
const reg = LocalRegistry.init("reg");
writeFileSync("reg/layers/x.json", "{}");
writeFileSync("reg/layers/x.json.dsse", ${jsonObjects(60 * MiB)});
reg.readLayer("x");`,
  },
  {
    name: "events.json: 63 MiB (under run.recorded-list-bytes) of [{},...], through the replay's reader",
    expect: "LIMIT_EXCEEDED",
    body: `const { readFileBounded, parseJsonBytes } = await import(src + "/core/index.ts");
const { RUN_READ_LIMITS } = await import(src + "/vm/replay-run.ts");
const { writeFileSync } = await import("node:fs");
writeFileSync("events.json", ${jsonObjects(63 * MiB)});
parseJsonBytes(readFileBounded("events.json", RUN_READ_LIMITS["run.recorded-list-bytes"], "run.recorded-list-bytes"));`,
  },
  {
    name: "OCI index.json: 4 MiB of 1.4 million {} descriptors",
    expect: "LIMIT_EXCEEDED",
    body: `const { readOciSource } = await import(src + "/oci/index.ts");
const { writeFileSync, mkdirSync } = await import("node:fs");
mkdirSync("layout");
writeFileSync("layout/oci-layout", '{"imageLayoutVersion":"1.0.0"}');
writeFileSync("layout/index.json", '{"schemaVersion":2,"manifests":' + ${jsonObjects(4 * MiB)} + "}");
await readOciSource({ layoutDir: "layout", manifestDigest: "sha256:" + "0".repeat(64), stagingDir: "staging" });`,
  },
  {
    name: "strata blob: a 3.9 MB gzip bomb inflating to 3.75 GiB, read as lock verify --contents does",
    expect: "LIMIT_EXCEEDED",
    body: `const { zeroFilesBlob } = await import(src + "/../tests/strata/gzip-bomb.ts");
const { readLayerBlobs } = await import(src + "/strata/index.ts");
const b = zeroFilesBlob(2, 30 * 64 * 1024 * 1024, false);
await readLayerBlobs([{ blob: b.blob, expected: b, where: "bomb" }], { keepContent: false });`,
  },
  {
    name: "strata blob: the same bomb, read as layer fold does (file bytes kept)",
    expect: "LIMIT_EXCEEDED",
    body: `const { zeroFilesBlob } = await import(src + "/../tests/strata/gzip-bomb.ts");
const { readLayerBlobs } = await import(src + "/strata/index.ts");
const b = zeroFilesBlob(2, 30 * 64 * 1024 * 1024, false);
await readLayerBlobs([{ blob: b.blob, expected: b, where: "bomb" }]);`,
  },
  {
    name: "control: a JSON list of 999,990 {} (just under json_nodes) is accepted",
    expect: "accepted",
    body: `const { parseJsonBytes } = await import(src + "/core/index.ts");
parseJsonBytes(Buffer.from("[" + "{},".repeat(999989) + "{}]"));`,
  },
  {
    name: "control: a YAML flow list of 499,990 scalars (just under yaml_nodes) is accepted",
    expect: "accepted",
    body: `const { parseYamlText } = await import(src + "/core/index.ts");
parseYamlText("[" + "a,".repeat(499989) + "a]");`,
  },
];

describe("memory budget at the default limits (child processes)", () => {
  for (const c of CASES) {
    it(`${c.name}: ${c.expect} within ${BUDGET_MIB} MiB`, () => {
      const r = measure(c.body);
      assert.equal(r.outcome, c.expect);
      assert.ok(r.rssMiB < BUDGET_MIB, `peak RSS ${r.rssMiB} MiB`);
      process.stdout.write(`# ${c.name}: ${r.outcome}, peak ${r.rssMiB} MiB\n`);
    });
  }
});
