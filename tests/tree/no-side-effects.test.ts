/**
 * The tree area (layer application, the tar gate and writer, in-root
 * resolution, root views) never runs a process and never writes to the host
 * filesystem (claim O17): file bytes leave only through the caller's content
 * sink. A static check, so it fails the moment someone reaches for `tar` or
 * writes a file here. Two nets: what is imported (from node:fs only names on
 * a read-only list, from core none of its file writers or openers, nothing
 * from child_process) and what is called (any fs write or process API by
 * name, however it was reached).
 */
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { PROJECT_ROOT } from "../helpers/vectors.ts";

const dir = join(PROJECT_ROOT, "src", "tree");

/** node:fs names that only read (a descriptor opened elsewhere, or a path, without creating or changing anything). */
const READ_ONLY_FS = new Set([
  "createReadStream",
  "lstatSync",
  "statSync",
  "fstatSync",
  "readdirSync",
  "readlinkSync",
  "readFileSync",
  "readSync",
  "closeSync",
  "existsSync",
  "realpathSync",
  "constants",
  "type Stats",
  "type Dirent",
]);
/**
 * core's file writers and creators (src/core/files.ts): none belongs in the
 * tree area. Its read-only opener and positional read (`openForRead`:
 * O_RDONLY | O_NOFOLLOW | O_NONBLOCK; `readFullyAt`) may be used: the
 * directory reader streams a layer build's files through them.
 */
const CORE_FILE_API = [
  "writeFileAtomic",
  "mkdirPrivate",
  "tempSibling",
  "fsyncDir",
  "writeFully",
  "writeFullyAt",
  "writeNewFile",
  "writeNewFileAsync",
  "createExclusive",
];
/** fs calls that write, create, open or change metadata, sync or async, by name. */
const WRITE_CALLS = [
  "writeFile",
  "appendFile",
  "createWriteStream",
  "mkdir",
  "mkdtemp",
  "rename",
  "symlink",
  "link",
  "chmod",
  "fchmod",
  "lchmod",
  "chown",
  "fchown",
  "lchown",
  "utimes",
  "futimes",
  "lutimes",
  "rm",
  "rmdir",
  "unlink",
  "write",
  "writev",
  "open",
  "copyFile",
  "cp",
  "truncate",
  "ftruncate",
  "fsync",
  "fdatasync",
  "mkfifo",
];
const W = WRITE_CALLS.join("|");
/** A bare call (`unlinkSync(p)`), any `*Sync` method (`fs.linkSync(p)`), or an fs-namespace method (`fs.open(p)`); `buf.write(...)` is not fs. */
const CALL = new RegExp(`(?<![.\\w])(?:${W})(?:Sync)?\\s*\\(|\\.(?:${W})Sync\\s*\\(|\\b(?:fs|fsp|promises)\\.(?:${W})\\s*\\(`);
const PROCESS = /\bchild_process\b|(?<!\.)\bexec(?:File)?(?:Sync)?\s*\(|\bspawn(?:Sync)?\s*\(|\bfork\s*\(/;

/** Code only: comments and string literals (messages mention symlinks and links) are blanked. */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, "").replace(/"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`/g, '""');
}

/** Every finding in one module's text. */
export function sideEffects(text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/import\s+(type\s+)?([\s\S]*?)\s+from\s+["']([^"']+)["']/g)) {
    const clause = m[2]!;
    const from = m[3]!;
    const names = /^\{([\s\S]*)\}$/.test(clause)
      ? clause
          .slice(1, -1)
          .split(",")
          .map((n) => n.trim().replace(/\s+as\s+\w+$/, ""))
          .filter((n) => n !== "")
      : [clause];
    if (/^(node:)?fs(\/promises)?$/.test(from)) {
      if (m[1] !== undefined) continue; // types only
      for (const n of names) if (!READ_ONLY_FS.has(n)) found.push(`imports ${n} from ${from}`);
    }
    if (/^(node:)?child_process$/.test(from)) found.push(`imports ${from}`);
    if (/core\/(index|files)\.ts$/.test(from)) for (const n of names) if (CORE_FILE_API.includes(n)) found.push(`imports ${n} from core`);
  }
  const body = code(text);
  const call = body.match(CALL);
  if (call) found.push(`calls ${call[0]}`);
  const proc = body.match(PROCESS);
  if (proc) found.push(`uses ${proc[0]}`);
  if (/\bimport\s*\(/.test(body)) found.push("dynamic import");
  return found;
}

describe("no side effects in src/tree (O17)", () => {
  it("src/tree imports and calls no process or fs-write API", () => {
    const files = readdirSync(dir).filter((f) => f.endsWith(".ts"));
    assert.ok(files.length >= 14);
    const found = files.flatMap((f) => sideEffects(readFileSync(join(dir, f), "utf8")).map((s) => `${f}: ${s}`));
    assert.deepEqual(found, []);
  });

  it("control: each write, open and process API is caught, by import and by call; read-only imports pass", () => {
    assert.deepEqual(sideEffects('import { createReadStream, lstatSync } from "node:fs";\nimport type { Stats } from "node:fs";\nconst m = "symlink(";'), []);
    const names = [
      "appendFileSync",
      "symlinkSync",
      "linkSync",
      "chmodSync",
      "unlinkSync",
      "utimesSync",
      "writeSync",
      "openSync",
      "copyFileSync",
      "truncateSync",
      "writeFile",
      "mkdirSync",
      "renameSync",
      "rmSync",
      "createWriteStream",
      "fsyncSync",
    ];
    for (const n of names) {
      assert.deepEqual(sideEffects(`import { ${n} } from "node:fs";`), [`imports ${n} from node:fs`], n);
      assert.deepEqual(sideEffects(`fs.${n}(p);`), [`calls ${n.endsWith("Sync") ? "." : "fs."}${n}(`], `${n} called`);
      assert.deepEqual(sideEffects(`${n}(p);`), [`calls ${n}(`], `${n} called bare`);
    }
    assert.deepEqual(sideEffects('import * as fs from "node:fs";'), ["imports * as fs from node:fs"]);
    assert.deepEqual(sideEffects('import { open } from "node:fs/promises";'), ["imports open from node:fs/promises"]);
    for (const n of ["createExclusive", "writeFileAtomic", "writeFully", "writeFullyAt"]) {
      assert.deepEqual(sideEffects(`import { CairnError, ${n} } from "../core/index.ts";`), [`imports ${n} from core`], n);
    }
    // the read-only opener and reads pass
    assert.deepEqual(sideEffects('import { openForRead, readFullyAt } from "../core/index.ts";\nimport { closeSync } from "node:fs";'), []);
    assert.deepEqual(sideEffects("import { execFile } from 'node:child_process';"), ["imports node:child_process"]);
    assert.deepEqual(sideEffects('spawnSync("tar", ["x"]);'), ["uses spawnSync("]);
    assert.deepEqual(sideEffects('buf.write("ustar", 257); stream.write(part);'), [], "Buffer and stream writes are not fs");
    assert.deepEqual(sideEffects('const fs = await import("node:fs");'), ["dynamic import"]);
  });
});
