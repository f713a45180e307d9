/**
 * Peak memory of a piece of code, measured in a child process of its own:
 * `prelude` and then `body` (TypeScript, run by `node --import tsx`) in a
 * fresh script under `dir`. The child reports the refusal code `body` threw
 * (or "accepted") and its own peak resident set: VmHWM from
 * /proc/self/status, its peak since exec (getrusage's maxRSS would also
 * count this process's resident set at fork). Used by the tests in
 * tests/faults/ that bound a command's memory by a baseline plus a budget.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { PROJECT_ROOT } from "./vectors.ts";

export interface Peak {
  readonly outcome: string;
  readonly rssMiB: number;
}

export function peakInChild(dir: string, name: string, prelude: string, body: string): Peak {
  const script = join(dir, `${name}.mts`);
  writeFileSync(
    script,
    `${prelude}
let outcome = "accepted";
try {
${body}
} catch (e) { outcome = (e as { code?: string }).code ?? "uncoded " + String(e).slice(0, 200); }
const peakStatus = (await import("node:fs")).readFileSync("/proc/self/status", "latin1");
const peakHwm = /VmHWM:\\s+(\\d+) kB/.exec(peakStatus)!;
process.stdout.write(JSON.stringify({ outcome, rssMiB: Math.round(Number(peakHwm[1]) / 1024) }));
`,
  );
  const r = spawnSync(process.execPath, ["--import", "tsx", script], { cwd: PROJECT_ROOT, encoding: "utf8", timeout: 600_000, maxBuffer: 1 << 20 });
  assert.equal(r.status, 0, `the child survived (signal ${r.signal}; ${r.stderr.slice(-600)})`);
  return JSON.parse(r.stdout) as Peak;
}
