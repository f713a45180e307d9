import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { sha256 } from "../../src/core/index.ts";
import { fsIdentity, frameTree } from "../../src/tree/fs-digest.ts";
import { WORKLOAD_IDENTITY_SCOPE } from "../../src/workload/workload-identity.ts";
import { launchIdentity, makeLaunch } from "../../src/workload/launch.ts";
import type { FsEntry } from "../../src/tree/entries.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";

const doc = readFileSync(join(PROJECT_ROOT, "docs", "workload.md"), "utf8");

test("the cairn.fs/1 worked example in docs/workload.md is what the code computes", () => {
  const tree = new Map<string, FsEntry>([
    ["/", { type: "dir", path: "/", mode: 0o755, uid: 0, gid: 0, mtime: 0 }],
    ["/hello", { type: "file", path: "/hello", mode: 0o644, uid: 0, gid: 0, mtime: 0, size: 3, sha256: sha256("hi\n") }],
    ["/link", { type: "symlink", path: "/link", mode: 0o777, uid: 0, gid: 0, mtime: 0, target: "hello" }],
  ]);
  const block = /```\n(0000000000000003[\s\S]*?)```/.exec(doc);
  assert.ok(block, "the framing example block is in the doc");
  assert.equal(block[1]!.replace(/\s+/g, ""), frameTree(tree).toString("hex"));
  assert.ok(doc.includes(fsIdentity(tree)), "the example's identity is in the doc");
});

test("the launch example in the doc is what the code computes", () => {
  assert.ok(doc.includes(launchIdentity(makeLaunch({ argv: ["/bin/app"], env: [], workdir: "/", user: "1000:1000" }, ""))));
});

test("every field of WORKLOAD_IDENTITY_SCOPE is named in the doc's scope table with the same class", () => {
  const rows = [
    ...Object.keys(WORKLOAD_IDENTITY_SCOPE.covers).map((f) => [f, { covered: true }] as const),
    ...Object.keys(WORKLOAD_IDENTITY_SCOPE.excludes).map((f) => [f, { covered: false }] as const),
  ];
  for (const [field, row] of rows) {
    const [kind, pointer] = field.split(":") as [string, string];
    const last = pointer.split("/").pop()!;
    const line = doc.split("\n").find((l) => l.startsWith("| `") && l.includes(`${kind}:`) && (l.includes(`\`${field}\``) || l.includes(`\`${last}\``)));
    assert.ok(line, `${field} is missing from the scope table in docs/workload.md`);
    assert.ok(line.includes(row.covered ? "| yes |" : "| no |"), `${field} has another class in the doc`);
  }
});
