/**
 * What is fsynced (claim W19), observed from outside with strace rather than
 * taken from the code: an assembly runs under `strace -f -y`, and for every
 * file given its final name by rename(2) the test checks whether that file
 * was fsynced before: raw objects, derived entries and the lock are; content
 * packs are not (derived, rebuildable). Published store files also get their
 * directory fsynced after the rename.
 */
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { needs } from "../helpers/prerequisites.ts";
import { dir, file } from "./fixtures/tar-writer.ts";
import { helloImage, ociWorkspace } from "./fixtures/workspace.ts";
import { GCC_SKIP } from "./fixtures/static-program.ts";

const CHILD = fileURLToPath(new URL("./fixtures/assemble-child.ts", import.meta.url));

function straceMissing(): string | undefined {
  try {
    execFileSync("strace", ["-V"], { stdio: "pipe" });
    return undefined;
  } catch {
    return "strace is not installed (scripts/setup-host.sh installs it)";
  }
}

export interface Renamed {
  readonly from: string;
  readonly to: string;
  /** The file was fsynced (by any descriptor naming it) before the rename. */
  readonly fileSynced: boolean;
  /** The target's directory was fsynced after the rename. */
  readonly dirSynced: boolean;
}

/** Reads an `strace -f -y -e trace=fsync,rename,renameat,renameat2` log into the renames it shows. */
export function renames(log: string): Renamed[] {
  const synced: { path: string; at: number }[] = [];
  const moves: { from: string; to: string; at: number }[] = [];
  log.split("\n").forEach((line, at) => {
    const f = /\bfsync\(\d+<([^>]+)>\)\s*=\s*0/.exec(line);
    if (f) synced.push({ path: f[1]!, at });
    const r = /\brename(?:at2?)?\((?:AT_FDCWD(?:<[^>]*>)?, )?"([^"]+)", (?:AT_FDCWD(?:<[^>]*>)?, )?"([^"]+)"[^)]*\)\s*=\s*0/.exec(line);
    if (r) moves.push({ from: r[1]!, to: r[2]!, at });
  });
  return moves.map((m) => ({
    from: m.from,
    to: m.to,
    fileSynced: synced.some((s) => s.path === m.from && s.at < m.at),
    dirSynced: synced.some((s) => s.path === join(m.to, "..") && s.at > m.at),
  }));
}

test("strace sees raw objects, derived entries and the lock fsynced before they are named, and content packs not (control: the parser on a planted log)", {
  skip: GCC_SKIP || needs(straceMissing()),
  timeout: 120_000,
}, () => {
  const planted = [
    "123 fsync(21</s/staging/w/put-0>) = 0",
    '123 rename("/s/staging/w/put-0", "/s/objects/sha256/aa") = 0',
    "123 fsync(22</s/objects/sha256>) = 0",
    '123 rename("/s/staging/w/pack-1", "/s/packs/sha256/bb") = 0',
  ].join("\n");
  assert.deepEqual(renames(planted), [
    { from: "/s/staging/w/put-0", to: "/s/objects/sha256/aa", fileSynced: true, dirSynced: true },
    { from: "/s/staging/w/pack-1", to: "/s/packs/sha256/bb", fileSynced: false, dirSynced: false },
  ]);

  const many = Array.from({ length: 20 }, (_, i) => file(`data/f${i}`, `content ${i}\n`, { mode: 0o644 }));
  const base = helloImage();
  const ws = ociWorkspace({ ...base, layers: [...base.layers, { entries: [dir("data/"), ...many] }] });
  const logPath = join(ws.dir, "strace.log");
  const r = spawnSync(
    "strace",
    [
      "-f",
      "-y",
      "-qq",
      "-o",
      logPath,
      "-e",
      "trace=fsync,rename,renameat,renameat2",
      process.execPath,
      "--import",
      "tsx",
      CHILD,
      ws.specPath,
      ws.storeDir,
      ws.lockPath,
    ],
    {
      encoding: "utf8",
      timeout: 100_000,
    },
  );
  assert.equal(r.status, 0, r.stderr);
  const all = renames(readFileSync(logPath, "utf8"));
  const area = (to: string): string => (to === ws.lockPath ? "lock" : (/\/store\/(objects|derived|packs)\/sha256\/[0-9a-f]{64}$/.exec(to)?.[1] ?? "other"));
  const by = (a: string) => all.filter((m) => area(m.to) === a);
  for (const a of ["objects", "derived", "packs", "lock"])
    assert.ok(by(a).length > 0, `the assembly named at least one ${a} file (${JSON.stringify(all.map((m) => m.to))})`);
  for (const m of [...by("objects"), ...by("derived")]) assert.ok(m.fileSynced && m.dirSynced, `${m.to} fsynced, and its directory`);
  for (const m of by("lock")) assert.ok(m.fileSynced, "the lock is fsynced before it is named");
  for (const m of by("packs")) assert.equal(m.fileSynced, false, "a content pack is not fsynced");
});
