import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { CairnError, sha256 } from "../../src/core/index.ts";
import { checkStaticExecutable } from "../../src/workload/elf.ts";
import { fsIdentity } from "../../src/tree/fs-digest.ts";
import { encodeWorkloadLock, parseWorkloadLock } from "../../src/workload/workload-lock.ts";
import { STRICT_POLICY } from "../../src/tree/layer-policy.ts";
import { parseWorkloadSpec } from "../../src/workload/spec.ts";
import type { FsEntry } from "../../src/tree/entries.ts";
import { GCC_SKIP, programBytes } from "./fixtures/static-program.ts";

const ELF_CODES = new Set(["ELF_DYNAMIC", "ELF_STATIC_PIE", "ELF_WRONG_ARCH", "ELF_MALFORMED"]);

test("ELF gate: random corruption of headers is accepted or refused with an ELF code, never a crash", { skip: GCC_SKIP }, () => {
  const good = programBytes("static");
  let refused = 0;
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.nat(1024), fc.nat(255)), { minLength: 1, maxLength: 8 }), fc.nat(good.length), (edits, cut) => {
      const b = Buffer.from(good.subarray(0, Math.max(cut, 1024)));
      for (const [at, v] of edits) if (at < b.length) b[at] = v;
      try {
        checkStaticExecutable(b, "fuzz");
      } catch (e) {
        assert.ok(e instanceof CairnError && ELF_CODES.has(e.code), `unexpected ${String(e)}`);
        refused++;
      }
    }),
    { numRuns: 500 },
  );
  assert.ok(refused > 0, "control: some corruptions are refused");
});

const D = (path: string): FsEntry => ({ type: "dir", path, mode: 0o755, uid: 0, gid: 0, mtime: 0 });

// An independent encoder of the documented framing (written from docs/workload.md).
function oracle(entries: FsEntry[]): string {
  const sorted = [...entries].sort((a, b) => Buffer.compare(Buffer.from(a.path), Buffer.from(b.path)));
  const u32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n);
    return b;
  };
  const u64 = (n: number) => {
    const b = Buffer.alloc(8);
    b.writeBigUInt64BE(BigInt(n));
    return b;
  };
  const s = (t: string) => Buffer.concat([u32(Buffer.byteLength(t)), Buffer.from(t)]);
  const parts: Buffer[] = [Buffer.from("cairn.fs/1\0"), u64(sorted.length)];
  for (const e of sorted) {
    parts.push(Buffer.from({ dir: "D", file: "F", symlink: "L" }[e.type]), s(e.path), u32(e.mode), u32(e.uid), u32(e.gid), u64(e.mtime));
    if (e.type === "file") parts.push(u64(e.size), Buffer.from(e.sha256.slice(7), "hex"));
    if (e.type === "symlink") parts.push(s(e.target));
  }
  return sha256(Buffer.concat(parts));
}

test("cairn.fs/1 agrees with the independent encoder on random trees", () => {
  const name = fc.stringMatching(/^[a-zé日Z0-9._-]{1,6}$/).filter((n) => n !== "." && n !== "..");
  const leaf = fc.record({
    type: fc.constantFrom("file", "symlink", "dir"),
    mode: fc.integer({ min: 0, max: 0o1777 }),
    uid: fc.integer({ min: 0, max: 0xffffffff }),
    gid: fc.integer({ min: 0, max: 70000 }),
    mtime: fc.integer({ min: 0, max: 2 ** 40 }),
    data: fc.string({ maxLength: 20 }),
  });
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.array(name, { minLength: 1, maxLength: 3 }), leaf), { maxLength: 25 }), (items) => {
      const tree = new Map<string, FsEntry>([["/", D("/")]]);
      for (const [parts, l] of items) {
        const parents = parts.slice(0, -1).map((_, i) => `/${parts.slice(0, i + 1).join("/")}`);
        const path = `/${parts.join("/")}`;
        // Keep the tree valid: no entry under a non-directory, no path twice.
        if (tree.has(path) || parents.some((q) => tree.has(q) && tree.get(q)!.type !== "dir")) continue;
        for (const q of parents) if (!tree.has(q)) tree.set(q, D(q));
        const base = { path, mode: l.mode, uid: l.uid, gid: l.gid, mtime: l.mtime };
        if (l.type === "file") tree.set(path, { ...base, type: "file", size: Buffer.byteLength(l.data), sha256: sha256(l.data) });
        else if (l.type === "symlink") tree.set(path, { ...base, type: "symlink", target: l.data || "x" });
        else tree.set(path, { ...base, type: "dir" });
      }
      assert.equal(fsIdentity(tree), oracle([...tree.values()]));
    }),
    { numRuns: 300 },
  );
});

test("lock parsing: random edits of a valid lock are refused with a lock or JSON code, never a crash", () => {
  const d = (c: string) => `sha256:${c.repeat(64)}` as ReturnType<typeof sha256>;
  const text = encodeWorkloadLock({
    kind: "binary",
    identities: { workload: d("1"), source: d("2"), fs: d("3"), launch: d("4") },
    policy: STRICT_POLICY,
    raw: [
      { role: "spec", digest: d("5"), size: 10 },
      { role: "executable", digest: d("6"), size: 20 },
    ],
    derived: { digest: d("7"), size: 30 },
    created: "1970-01-01T00:00:00.000Z",
    cairnVersion: "test",
  });
  assert.equal(parseWorkloadLock(Buffer.from(text), "ok").identities.fs, d("3")); // control
  fc.assert(
    fc.property(fc.nat(text.length - 1), fc.string({ minLength: 1, maxLength: 3 }), (at, ins) => {
      const edited = text.slice(0, at) + ins + text.slice(at + 1);
      if (edited === text) return;
      try {
        parseWorkloadLock(Buffer.from(edited), "fuzz");
      } catch (e) {
        assert.ok(e instanceof CairnError, `unexpected ${String(e)}`);
        return;
      }
      // A few edits are no-ops for the model (whitespace); anything accepted must equal the original.
      assert.equal(JSON.stringify(JSON.parse(edited)), JSON.stringify(JSON.parse(text)));
    }),
    { numRuns: 500 },
  );
});

test("spec parsing: arbitrary JSON is accepted or refused with a CairnError, never a crash", () => {
  fc.assert(
    fc.property(fc.jsonValue(), (v) => {
      try {
        parseWorkloadSpec(Buffer.from(JSON.stringify({ schema: "cairn.workload/1", source: v })), "f.json");
      } catch (e) {
        assert.ok(e instanceof CairnError, `unexpected ${String(e)}`);
      }
    }),
    { numRuns: 500 },
  );
});
