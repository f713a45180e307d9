import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { needs } from "../helpers/prerequisites.ts";
import { sha256 } from "../../src/core/index.ts";
import { fsIdentity } from "../../src/tree/fs-digest.ts";
import type { FsEntry } from "../../src/tree/entries.ts";

const SCRIPT = fileURLToPath(new URL("./fixtures/fs_identity.py", import.meta.url));
let python: string | false = false;
try {
  execFileSync("python3", ["--version"], { stdio: "pipe" });
  python = "python3";
} catch {
  python = false;
}

const D = (path: string): FsEntry => ({ type: "dir", path, mode: 0o755, uid: 0, gid: 0, mtime: 0 });

test("a Python implementation written from docs/workload.md computes the same cairn.fs/1", {
  skip: needs(python ? undefined : "python3 is not installed (scripts/setup-host.sh installs it)"),
}, () => {
  const leaf = fc.record({
    name: fc.stringMatching(/^[a-zé日Z0-9._-]{1,8}$/).filter((n) => n !== "." && n !== ".."),
    type: fc.constantFrom("file", "symlink", "dir"),
    mode: fc.integer({ min: 0, max: 0o7777 }),
    uid: fc.integer({ min: 0, max: 0xffffffff }),
    mtime: fc.integer({ min: -(2 ** 40), max: 2 ** 40 }),
    data: fc.string({ minLength: 1, maxLength: 30 }),
  });
  fc.assert(
    fc.property(fc.array(leaf, { maxLength: 30 }), (leaves) => {
      const tree = new Map<string, FsEntry>([
        ["/", D("/")],
        ["/d", D("/d")],
      ]);
      for (const l of leaves) {
        const path = `/d/${l.name}`;
        if (tree.has(path)) continue;
        const base = { path, mode: l.mode, uid: l.uid, gid: 7, mtime: l.mtime };
        if (l.type === "file") tree.set(path, { ...base, type: "file", size: Buffer.byteLength(l.data), sha256: sha256(l.data) });
        else if (l.type === "symlink") tree.set(path, { ...base, type: "symlink", target: l.data.replace(/\0/g, "x") });
        else tree.set(path, { ...base, type: "dir" });
      }
      const out = execFileSync(python as string, [SCRIPT], { input: JSON.stringify([...tree.values()]) })
        .toString()
        .trim();
      assert.equal(out, fsIdentity(tree));
    }),
    { numRuns: 20 },
  );
});
