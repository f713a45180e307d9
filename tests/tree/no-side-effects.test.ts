/**
 * The tree area (layer application, the tar gate and writer, in-root
 * resolution, root views) never runs a process and never writes to the host
 * filesystem: its modules import no child_process and no fs write API (file
 * bytes leave only through the caller's content sink). A static check, so it
 * fails the moment someone reaches for `tar` or writes a file here.
 */
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { it } from "node:test";
import { PROJECT_ROOT } from "../helpers/vectors.ts";

const dir = join(PROJECT_ROOT, "src", "tree");
const FORBIDDEN = [
  /child_process/,
  /\b(writeFile|writeFileSync|appendFile|createWriteStream|mkdir|mkdirSync|rename|renameSync|symlink|link|chmod|chown|utimes|rm|rmSync|unlink)\b\s*\(/,
  /(?<!\.)\bexec(File)?(Sync)?\s*\(|\bspawn(Sync)?\s*\(/,
];

it("src/tree imports no process or fs-write API", () => {
  const files = readdirSync(dir).filter((f) => f.endsWith(".ts"));
  assert.ok(files.length >= 14);
  for (const f of files) {
    // Comments and string literals (messages mention symlinks and links) are not code.
    const text = readFileSync(join(dir, f), "utf8")
      .replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, "")
      .replace(/"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`/g, '""');
    for (const re of FORBIDDEN) assert.doesNotMatch(text, re, `${f} uses ${re}`);
  }
  // Control: the check does see such calls.
  assert.match("import { execFile } from 'node:child_process'; execFile('tar', [])", FORBIDDEN[0]!);
  assert.match("await writeFile(p, b)", FORBIDDEN[1]!);
  assert.match('spawnSync("tar", ["x"])', FORBIDDEN[2]!);
});
