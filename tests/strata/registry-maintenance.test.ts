// `cairn registry index` and `cairn registry remove` (issue 32, item 6, I32-6f):
// rebuild or check a directory registry's index from the manifests present
// (atomically; with --trust every signature must verify), and remove a layer
// (manifest, then its blob unless another manifest names it) or a formation,
// refusing a layer a formation still names unless --force.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { generateSigningKey, parseEnvelope, parseJsonBytes, parseSha256, writeKeyPair } from "../../src/core/index.ts";
import { buildLayerFromDirectory, LocalRegistry, searchRegistries } from "../../src/strata/index.ts";
import { toySpec } from "../../examples/strata/build-registry.ts";
import { runCli } from "../helpers/cli.ts";
import { exampleRegistry, tempDir } from "./fixtures.ts";

interface IndexJson {
  layers: number;
  formations: number;
  signatures_checked: number;
  unreferenced_blobs: string[];
  problems: { path: string; message: string }[];
  current: boolean;
  written: boolean;
}

async function indexCmd(
  registry: string,
  ...extra: string[]
): Promise<{ code: number; json: IndexJson & { error?: { code: string; path: string; message: string } } }> {
  const r = await runCli(["registry", "index", "--registry", registry, ...extra, "--json"]);
  return { code: r.code, json: JSON.parse(r.stdout) as IndexJson & { error?: { code: string; path: string; message: string } } };
}

async function removeCmd(
  registry: string,
  target: string,
  ...extra: string[]
): Promise<{
  code: number;
  json: {
    removed: string;
    deleted: string[];
    blob_kept: { sha256: string; namedBy: string[] } | null;
    broken_formations: string[];
    error?: { code: string; path: string; message: string };
  };
}> {
  const r = await runCli(["registry", "remove", target, "--registry", registry, ...extra, "--json"]);
  return { code: r.code, json: JSON.parse(r.stdout) };
}

const indexFile = (registry: string): string => join(registry, "cairn-index.json");

test("registry index rebuilds the index from the manifests present; a second run finds it current and leaves the bytes; --check writes nothing", async () => {
  const ex = exampleRegistry();
  const none = await indexCmd(ex.registry, "--check");
  assert.equal(none.code, 1, "no index yet: not current");
  assert.equal(none.json.written, false);
  assert.ok(!existsSync(indexFile(ex.registry)), "--check writes nothing");
  const r = await indexCmd(ex.registry);
  assert.equal(r.code, 0, JSON.stringify(r.json));
  assert.equal(r.json.layers, 7);
  assert.equal(r.json.formations, 1);
  assert.equal(r.json.written, true);
  assert.deepEqual(r.json.problems, []);
  const index = JSON.parse(readFileSync(indexFile(ex.registry), "utf8")) as {
    format: string;
    layers: { id: string; user_selectable: boolean; envelope_sha256: string }[];
    formations: { name: string; layers: string[] }[];
  };
  assert.equal(index.format, "cairn.registry-index/1");
  assert.deepEqual(
    index.layers.map((l) => l.id),
    [...index.layers.map((l) => l.id)].sort(),
  );
  assert.equal(index.layers.find((l) => l.id === "samtools-1.20-gnu-x86_64")?.user_selectable, false);
  assert.deepEqual(index.formations[0]?.layers, ["samtools-1.20-gnu-x86_64", "bwa-0.7.18-gnu-x86_64"]);
  const before = readFileSync(indexFile(ex.registry));
  const again = await indexCmd(ex.registry);
  assert.equal(again.json.current, true);
  assert.equal(again.json.written, false);
  assert.deepEqual(readFileSync(indexFile(ex.registry)), before);
  assert.equal((await indexCmd(ex.registry, "--check")).code, 0);
  // a layer published after the index: stale until rebuilt
  const src = join(ex.root, "src", "tool-a-1.0");
  const built = buildLayerFromDirectory(src, { ...toySpec({ name: "tool-c", version: "1.0", files: {} }) });
  LocalRegistry.open(ex.registry).publishLayer(built.blob.blob, built.manifest, [ex.registryKey]);
  const stale = await runCli(["registry", "index", "--registry", ex.registry, "--check"]);
  assert.equal(stale.code, 1);
  assert.match(stale.stdout, /is stale/);
  assert.deepEqual(readFileSync(indexFile(ex.registry)), before, "--check leaves the stale index alone");
  assert.equal((await indexCmd(ex.registry)).json.layers, 8);
});

test("--trust: every manifest must verify against the key; a wrong key or a tampered manifest refuses and nothing is written", async () => {
  const ex = exampleRegistry();
  const good = await indexCmd(ex.registry, "--trust", `keyfile://${ex.root}/registry.pub`, "--check");
  assert.equal(good.json.signatures_checked, 8, "control: 7 layers and 1 formation verify");
  const other = join(ex.root, "other");
  writeKeyPair(other, generateSigningKey(), true);
  const wrong = await indexCmd(ex.registry, "--trust", `keyfile://${other}.pub`);
  assert.equal(wrong.code, 1);
  assert.equal(wrong.json.error?.code, "TRUST_REFUSED");
  assert.ok(!existsSync(indexFile(ex.registry)), "nothing written");
  // one manifest's payload altered under its old signature
  const path = join(ex.registry, "layers", "numpy-2.0.1-none-noarch.json.dsse");
  const env = parseEnvelope(parseJsonBytes(readFileSync(path))) as { payloadType: string; payload: string; signatures: unknown[] };
  // one byte more (whitespace after the JSON): the manifest still parses, the signature no longer covers it
  const payload = `${Buffer.from(env.payload, "base64").toString("utf8")} `;
  writeFileSync(path, `${JSON.stringify({ ...env, payload: Buffer.from(payload).toString("base64") }, null, 2)}\n`);
  const tampered = await indexCmd(ex.registry, "--trust", `keyfile://${ex.root}/registry.pub`);
  assert.equal(tampered.json.error?.code, "SIGNATURE_INVALID");
  assert.match(tampered.json.error?.path ?? "", /numpy-2\.0\.1-none-noarch\.json\.dsse$/);
  assert.ok(!existsSync(indexFile(ex.registry)));
  assert.equal((await indexCmd(ex.registry)).code, 0, "without --trust signatures are not checked (and the output says so)");
});

test("registry index reports what it found: a missing blob, a wrong-sized blob, an unreferenced blob (exit 1, index still written); a malformed manifest refuses", async () => {
  const ex = exampleRegistry();
  const reg = LocalRegistry.open(ex.registry);
  const numpy = reg.readLayer("numpy-2.0.1-none-noarch").value;
  const tool = reg.readLayer("tool-a-1.0-none-noarch").value;
  writeFileSync(reg.blobPath(tool.sha256), "short");
  const orphan = parseSha256(`sha256:${"ab".repeat(32)}`);
  writeFileSync(reg.blobPath(orphan), "nobody names me");
  rmSync(reg.blobPath(numpy.sha256));
  const r = await indexCmd(ex.registry);
  assert.equal(r.code, 1);
  assert.equal(r.json.written, true);
  assert.ok(r.json.problems.some((p) => /numpy-2\.0\.1-none-noarch: its blob .* is missing/.test(p.message)));
  assert.ok(r.json.problems.some((p) => /tool-a-1\.0-none-noarch: its blob is 5 bytes/.test(p.message)));
  assert.deepEqual(r.json.unreferenced_blobs, [orphan]);
  writeFileSync(join(ex.registry, "layers", "broken-1-none-noarch.json"), '{"payloadType":');
  writeFileSync(join(ex.registry, "layers", "broken-1-none-noarch.json.dsse"), '{"payloadType":');
  const before = readFileSync(indexFile(ex.registry));
  const bad = await indexCmd(ex.registry);
  assert.equal(bad.json.error?.code, "JSON_SYNTAX");
  assert.deepEqual(readFileSync(indexFile(ex.registry)), before, "the old index stays");
});

test("registry remove deletes a layer's manifest and then its blob; search no longer lists it; an existing index is rewritten", async () => {
  const ex = exampleRegistry();
  assert.equal((await indexCmd(ex.registry)).code, 0);
  const reg = LocalRegistry.open(ex.registry);
  const numpy = reg.readLayer("numpy-2.0.1-none-noarch").value;
  const r = await removeCmd(ex.registry, "numpy-2.0.1-none-noarch");
  assert.equal(r.code, 0, JSON.stringify(r.json));
  assert.deepEqual(r.json.deleted, [reg.layerPath(numpy.id), reg.layerSignaturePath(numpy.id), reg.blobPath(numpy.sha256)]);
  assert.ok(!existsSync(reg.layerSignaturePath(numpy.id)));
  assert.ok(!existsSync(reg.layerPath(numpy.id)));
  assert.ok(!existsSync(reg.blobPath(numpy.sha256)));
  assert.ok(!searchRegistries([reg], "numpy").length, "gone from search");
  const check = await indexCmd(ex.registry, "--check");
  assert.equal(check.json.current, true, "the index was rewritten without it");
  assert.equal(check.json.layers, 6);
  assert.deepEqual(check.json.unreferenced_blobs, [], "no blob left behind");
});

test("a layer a formation names is refused (REGISTRY_REFERENCED naming the formation) and nothing is deleted; --force removes it and names the formation it breaks; removing the formation first frees it", async () => {
  const ex = exampleRegistry();
  const reg = LocalRegistry.open(ex.registry);
  const samtools = reg.readLayer("samtools-1.20-gnu-x86_64").value;
  const refused = await removeCmd(ex.registry, "samtools-1.20-gnu-x86_64");
  assert.equal(refused.code, 1);
  assert.equal(refused.json.error?.code, "REGISTRY_REFERENCED");
  assert.match(refused.json.error?.message ?? "", /formation:bio-seq@2026\.03/);
  assert.ok(existsSync(reg.layerPath(samtools.id)) && existsSync(reg.blobPath(samtools.sha256)), "nothing deleted");
  const forced = await removeCmd(ex.registry, "samtools-1.20-gnu-x86_64", "--force");
  assert.equal(forced.code, 0);
  assert.deepEqual(forced.json.broken_formations, ["formation:bio-seq@2026.03"]);
  assert.ok(!existsSync(reg.layerPath(samtools.id)));
  const after = await indexCmd(ex.registry);
  assert.ok(
    after.json.problems.some((p) => /member samtools-1\.20-gnu-x86_64 is not in the registry/.test(p.message)),
    "the index reports the broken formation",
  );
  // control: with the formation removed first, its other member goes without --force
  const f = await removeCmd(ex.registry, "formation:bio-seq@2026.03");
  assert.equal(f.code, 0, JSON.stringify(f.json));
  assert.deepEqual(f.json.deleted, [reg.formationPath("bio-seq", "2026.03"), reg.formationSignaturePath("bio-seq", "2026.03")]);
  assert.ok(existsSync(reg.layerPath("bwa-0.7.18-gnu-x86_64")), "removing a formation keeps its layers");
  assert.equal((await removeCmd(ex.registry, "bwa-0.7.18-gnu-x86_64")).code, 0);
});

test("a blob another manifest names is kept until its last manifest goes", async () => {
  const ex = exampleRegistry();
  const reg = LocalRegistry.open(ex.registry);
  // the same directory under two names: one blob, two manifests
  const src = join(ex.root, "src", "tool-a-1.0");
  const first = buildLayerFromDirectory(src, toySpec({ name: "twin-a", version: "1.0", files: {} }));
  const second = buildLayerFromDirectory(src, toySpec({ name: "twin-b", version: "1.0", files: {} }));
  assert.equal(first.manifest.sha256, second.manifest.sha256, "fixture: one blob");
  reg.publishLayer(first.blob.blob, first.manifest, [ex.registryKey]);
  reg.publishLayer(second.blob.blob, second.manifest, [ex.registryKey]);
  const a = await removeCmd(ex.registry, "twin-a-1.0-none-noarch");
  assert.equal(a.code, 0);
  assert.deepEqual(a.json.blob_kept?.namedBy, ["tool-a-1.0-none-noarch", "twin-b-1.0-none-noarch"]);
  assert.ok(existsSync(reg.blobPath(first.manifest.sha256)));
  await removeCmd(ex.registry, "twin-b-1.0-none-noarch");
  assert.ok(existsSync(reg.blobPath(first.manifest.sha256)), "tool-a still names it");
  const last = await removeCmd(ex.registry, "tool-a-1.0-none-noarch");
  assert.equal(last.json.blob_kept, null);
  assert.ok(!existsSync(reg.blobPath(first.manifest.sha256)), "gone with its last manifest");
});

test("bad targets: an unknown layer or formation (REGISTRY_NOT_FOUND), an unsafe id (PATH_UNSAFE), a malformed formation name (USAGE), an unreadable manifest elsewhere refuses before anything is deleted", async () => {
  const ex = exampleRegistry();
  const reg = LocalRegistry.open(ex.registry);
  assert.equal((await removeCmd(ex.registry, "nope-1.0-none-noarch")).json.error?.code, "REGISTRY_NOT_FOUND");
  assert.equal((await removeCmd(ex.registry, "formation:bio-seq@1999.01")).json.error?.code, "REGISTRY_NOT_FOUND");
  assert.equal((await removeCmd(ex.registry, "../registry.pub")).json.error?.code, "PATH_UNSAFE");
  assert.ok(existsSync(join(ex.root, "registry.pub")));
  const usage = await removeCmd(ex.registry, "formation:bio-seq");
  assert.equal(usage.code, 2);
  assert.equal(usage.json.error?.code, "USAGE");
  writeFileSync(join(ex.registry, "layers", "broken-1-none-noarch.json"), "{");
  writeFileSync(join(ex.registry, "layers", "broken-1-none-noarch.json.dsse"), "{");
  const blocked = await removeCmd(ex.registry, "tool-b-1.0-none-noarch");
  assert.equal(blocked.json.error?.code, "JSON_SYNTAX");
  assert.ok(existsSync(reg.layerPath("tool-b-1.0-none-noarch")), "nothing deleted");
});

test("oci:// registries are refused by both commands before anything is contacted (REGISTRY_INVALID), as is a directory that is not a registry", async () => {
  // port 1 on loopback: contacting it would be REMOTE_UNREACHABLE, not this refusal
  for (const args of [
    ["registry", "index", "--registry", "oci://127.0.0.1:1/layers", "--json"],
    ["registry", "remove", "x-1-none-noarch", "--registry", "oci://127.0.0.1:1/layers", "--json"],
  ]) {
    const r = await runCli(args);
    assert.equal(r.code, 1);
    const e = (JSON.parse(r.stdout) as { error: { code: string; message: string } }).error;
    assert.equal(e.code, "REGISTRY_INVALID");
    assert.match(e.message, /OCI registry/);
  }
  const plain = tempDir("cairn-notreg-");
  mkdirSync(join(plain, "layers"));
  assert.equal((await indexCmd(plain)).json.error?.code, "REGISTRY_INVALID");
  assert.ok(!existsSync(indexFile(plain)));
});
