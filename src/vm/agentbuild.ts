/**
 * Builds the guest agent reproducibly: `gcc -static` with fixed flags, the
 * sources in sorted order, source paths mapped to "agent/", no build id, and
 * a fixed locale and SOURCE_DATE_EPOCH. `buildAgent` compiles twice in two
 * different directories and refuses unless both outputs are byte-identical,
 * so a non-reproducible toolchain is caught at setup, not at replay.
 */
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CairnError, codeFile, sha256, type Sha256Digest } from "../core/index.ts";
import { runTool } from "./host.ts";

export const AGENT_SOURCE_DIR = codeFile("../agent");
export const AGENT_CFLAGS = ["-static", "-O2", "-std=gnu11", "-Wall", "-Wextra", "-fno-ident", "-fno-asynchronous-unwind-tables", "-Wl,--build-id=none"];
const GCC_FIX = "install the C toolchain: apt-get install -y gcc libc6-dev (or run `cairn setup` as root)";

export interface BuiltAgent {
  readonly bytes: Buffer;
  readonly digest: Sha256Digest;
  readonly compiler: string;
}

function compileOnce(sourceDir: string): Buffer {
  const work = mkdtempSync(join(tmpdir(), "cairn-agent-"));
  try {
    const sources = readdirSync(sourceDir)
      .filter((f) => /\.[ch]$/.test(f))
      .sort();
    for (const f of sources) copyFileSync(join(sourceDir, f), join(work, f));
    const out = join(work, "cairn-agent");
    const args = [...AGENT_CFLAGS, `-ffile-prefix-map=${work}=agent`, "-o", out, ...sources.filter((f) => f.endsWith(".c"))];
    const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", LC_ALL: "C", SOURCE_DATE_EPOCH: "0", TZ: "UTC" };
    const r = runTool("gcc", args, { cwd: work, env, fix: GCC_FIX });
    if (r.status !== 0) {
      throw new CairnError("PREREQUISITE_MISSING", `building the guest agent failed:\n${r.stderr}`, {
        path: sourceDir,
        hint: "a static build needs libc6-dev (static glibc): apt-get install -y gcc libc6-dev",
      });
    }
    return readFileSync(out);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

export function compilerVersion(): string {
  const r = runTool("gcc", ["-dumpfullversion"], { fix: GCC_FIX });
  return `gcc ${r.stdout.toString("utf8").trim()}`;
}

export function buildAgent(sourceDir = AGENT_SOURCE_DIR): BuiltAgent {
  const a = compileOnce(sourceDir);
  const b = compileOnce(sourceDir);
  if (!a.equals(b)) {
    throw new CairnError("RUN_INFRASTRUCTURE", "two builds of the guest agent differ; the toolchain is not reproducible", {
      path: sourceDir,
      hint: "check for a gcc wrapper adding timestamps or random seeds",
    });
  }
  return { bytes: a, digest: sha256(a), compiler: compilerVersion() };
}
