// `cairn search TERM --arch ARCH --abi ABI --formation --all` (issue 32, item 6, I32-6e):
// filters by the arch and ABI a layer runs on (the resolver's own match rules: a
// noarch layer runs on every arch, an abi `none` layer on every ABI),
// --formation lists formations only, --all adds dependency-only layers, marked.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildLayerFromDirectory, LocalRegistry, parseCapability, searchPlatform, searchRegistries, type SearchHit } from "../../src/strata/index.ts";
import { toySpec } from "../../examples/strata/build-registry.ts";
import { runCli } from "../helpers/cli.ts";
import { exampleRegistry } from "./fixtures.ts";

const ex = exampleRegistry();
// One more python, built for aarch64 and musl, so arch and ABI filters have something to separate.
{
  const src = join(ex.root, "src", "python-arm");
  mkdirSync(join(src, "opt/python/3.13/bin"), { recursive: true });
  writeFileSync(join(src, "opt/python/3.13/bin/python3"), "#!/bin/sh\necho arm\n");
  const spec = {
    ...toySpec({ name: "python", version: "3.13.0", files: {} }),
    arch: "aarch64" as const,
    abi: "musl" as const,
    provides: [parseCapability("python@3.13.0")],
  };
  const built = buildLayerFromDirectory(src, spec);
  LocalRegistry.open(ex.registry).publishLayer(built.blob.blob, built.manifest, [ex.registryKey]);
}
const reg = (): LocalRegistry => LocalRegistry.open(ex.registry);
const names = (hits: readonly SearchHit[]): string[] => hits.map((h) => `${h.kind === "formation" ? "formation:" : ""}${h.name}`);

test("control: without filters every user-selectable layer of every arch and the formation are listed, dependency-only ones are not", () => {
  const hits = searchRegistries([reg()], "");
  assert.deepEqual(names(hits), ["formation:bio-seq", "numpy", "python", "tool-a", "tool-b"]);
  const python = hits.find((h) => h.name === "python")!;
  assert.deepEqual(python.versions, ["3.13.0", "3.12.4", "3.11.9"]);
  assert.deepEqual(python.arches, ["aarch64", "x86_64"]);
  assert.deepEqual(python.abis, ["gnu", "musl"]);
  assert.equal(python.user_selectable, true);
});

test("--arch keeps layers built for that arch and noarch layers; versions for other arches drop out", () => {
  const arm = searchRegistries([reg()], "", { arch: "aarch64" });
  const python = arm.find((h) => h.name === "python")!;
  assert.deepEqual(python.versions, ["3.13.0"], "only the aarch64 build");
  assert.ok(
    arm.some((h) => h.name === "numpy"),
    "a noarch layer matches every arch",
  );
  const x86 = searchRegistries([reg()], "py", { arch: "x86_64" });
  assert.deepEqual(x86.find((h) => h.name === "python")?.versions, ["3.12.4", "3.11.9"]);
  // Strata's spelling of an arch is read as cairn's.
  assert.deepEqual(searchRegistries([reg()], "python", searchPlatform({ arch: "arm64" }))[0]?.versions, ["3.13.0"]);
  assert.deepEqual(searchRegistries([reg()], "python", { arch: "s390x" }), [], "nothing is built for s390x");
});

test("--abi keeps layers of that ABI and ABI-free (none) layers", () => {
  const gnu = searchRegistries([reg()], "", { abi: "gnu" });
  assert.deepEqual(gnu.find((h) => h.name === "python")?.versions, ["3.12.4", "3.11.9"]);
  assert.ok(
    gnu.some((h) => h.name === "numpy"),
    "abi none runs on any base",
  );
  const musl = searchRegistries([reg()], "", { abi: "musl", arch: "x86_64" });
  assert.ok(!musl.some((h) => h.name === "python"), "no musl python for x86_64");
  const none = searchRegistries([reg()], "", { abi: "none" });
  assert.ok(!none.some((h) => h.name === "python"));
});

test("--formation lists only formations; filters apply to a formation through its members", () => {
  assert.deepEqual(names(searchRegistries([reg()], "", { formationsOnly: true })), ["formation:bio-seq"]);
  assert.deepEqual(names(searchRegistries([reg()], "", { formationsOnly: true, arch: "x86_64", abi: "gnu" })), ["formation:bio-seq"]);
  assert.deepEqual(searchRegistries([reg()], "", { formationsOnly: true, arch: "aarch64" }), [], "its members are x86_64 only");
});

test("--all adds dependency-only layers, marked as such", () => {
  const all = searchRegistries([reg()], "", { all: true });
  const samtools = all.find((h) => h.name === "samtools");
  assert.ok(samtools, "listed with --all");
  assert.equal(samtools.user_selectable, false);
  assert.equal(all.find((h) => h.name === "python")?.user_selectable, true);
});

test("the CLI takes --arch --abi --formation --all, marks dependency-only layers, and refuses an unknown arch or ABI naming the flag", async () => {
  const a = await runCli(["search", "", "--registry", ex.registry, "--all", "--arch", "x86_64"]);
  assert.equal(a.code, 0, a.stderr);
  assert.match(a.stdout, /^samtools {2}1\.20 {2}x86_64\/gnu .*\(dependency-only\)$/m);
  assert.match(a.stdout, /^python {2}3\.12\.4, 3\.11\.9 {2}x86_64\/gnu {2}provides/m);
  assert.doesNotMatch(a.stdout, /3\.13\.0/);
  const f = await runCli(["search", "", "--registry", ex.registry, "--formation", "--json"]);
  assert.equal(f.code, 0, f.stderr);
  assert.deepEqual(
    (JSON.parse(f.stdout) as { hits: SearchHit[] }).hits.map((h) => h.kind),
    ["formation"],
  );
  const plain = await runCli(["search", "", "--registry", ex.registry]);
  assert.doesNotMatch(plain.stdout, /samtools/, "control: without --all no dependency-only layer");
  for (const [flag, value] of [
    ["--arch", "x86-64"],
    ["--abi", "linux-gnu"],
  ] as const) {
    const r = await runCli(["search", "", "--registry", ex.registry, flag, value, "--json"]);
    assert.equal(r.code, 2, r.stdout);
    const e = (JSON.parse(r.stdout) as { error: { code: string; path: string; message: string } }).error;
    assert.equal(e.code, "USAGE");
    assert.equal(e.path, flag);
  }
});
