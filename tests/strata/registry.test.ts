import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from "node:fs";
import { execFileSync, spawnSync } from "node:child_process";
import { join } from "node:path";
import { generateSigningKey, parseEnvelope, parseJsonBytes, type JsonObject } from "../../src/core/index.ts";
import {
  LocalRegistry,
  attest,
  buildLayerBlob,
  buildLayerFromDirectory,
  checkLayerContents,
  requirementString,
  parseLayerManifest,
  layerManifestToModel,
  manifestFor,
  readTrust,
  searchRegistries,
  foldLayers,
} from "../../src/strata/index.ts";
import { exampleRegistry, tempDir } from "./fixtures.ts";
import { readBounded } from "../../src/strata/registry.ts";
import { toySpec, TOY_LAYERS } from "../../examples/strata/build-registry.ts";
import { assertCode, assertCodeAsync } from "../helpers/errors.ts";
import { HANG_GUARD_MS } from "../helpers/in-child.ts";

function allFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" }).sort();
}

test("the registry layout is as documented and holds no temporary files after publishing", () => {
  const ex = exampleRegistry();
  const files = allFiles(ex.registry);
  assert.ok(files.includes("cairn-registry.json"));
  assert.ok(files.includes("layers/python-3.12.4-gnu-x86_64.json"));
  assert.ok(files.includes("layers/python-3.12.4-gnu-x86_64.json.dsse"));
  assert.ok(files.includes("formations/bio-seq-2026.03.json"));
  assert.ok(files.includes("formations/bio-seq-2026.03.json.dsse"));
  assert.ok(files.some((f) => /^blobs\/sha256\/[0-9a-f]{64}$/.test(f)));
  assert.ok(!files.some((f) => f.split("/").pop()!.startsWith(".")), "no leftovers");
});

test("republishing identical bytes is accepted; different content under the same id is refused", () => {
  const ex = exampleRegistry();
  const reg = LocalRegistry.open(ex.registry);
  const spec = toySpec(TOY_LAYERS[5]!);
  const again = buildLayerFromDirectory(join(ex.root, "src", "tool-a-1.0"), spec);
  const blob = again.blob;
  reg.publishLayer(blob.blob, again.manifest, [ex.registryKey]);
  const other = buildLayerBlob([{ type: "file", path: "usr/local/bin/tool", mode: 0o755, data: Buffer.from("different") }]);
  assertCode(() => reg.publishLayer(other.blob, manifestFor(spec, other), [ex.registryKey]), "REGISTRY_INVALID");
  assertCode(() => reg.publishLayer(blob.blob, manifestFor(spec, other), [ex.registryKey]), "DIGEST_MISMATCH");
});

test("ids and digests that would escape the registry are refused before any path is built", () => {
  const ex = exampleRegistry();
  const reg = LocalRegistry.open(ex.registry);
  for (const id of ["../x", "a/b", ".hidden", "", "a/../../b"]) assertCode(() => reg.layerPath(id), "PATH_UNSAFE");
  assertCode(() => reg.blobPath("sha256:../../etc/passwd" as never), "DIGEST_INVALID");
  assert.ok(reg.layerPath("python-3.12.4-gnu-x86_64").endsWith("layers/python-3.12.4-gnu-x86_64.json"));
  assertCode(() => LocalRegistry.open(tempDir("cairn-notreg-")), "REGISTRY_INVALID");
});

test("trust: a signed manifest verifies; a tampered one is SIGNATURE_INVALID even with --allow-unsigned-offline; unsigned needs the flag", () => {
  const ex = exampleRegistry();
  const reg = LocalRegistry.open(ex.registry);
  const doc = reg.readLayer("numpy-2.0.1-none-noarch");
  assert.equal(attest(doc, [ex.registryKey], false, "numpy").status, "signed");
  // Tamper: change the payload, keep the signature (the envelope alone, as a lockfile pins it; the registry's read also compares the seed document: tests/strata/registry-documents.test.ts).
  const path = reg.layerSignaturePath("numpy-2.0.1-none-noarch");
  const env = JSON.parse(readFileSync(path, "utf8")) as { payload: string };
  const payload = JSON.parse(Buffer.from(env.payload, "base64").toString()) as { provides: string[] };
  payload.provides = ["numpy@9.9"];
  env.payload = Buffer.from(JSON.stringify(payload)).toString("base64");
  const tampered = reg.layerFromBytes("numpy-2.0.1-none-noarch", Buffer.from(JSON.stringify(env)));
  assertCode(() => attest(tampered, [ex.registryKey], true, "numpy"), "SIGNATURE_INVALID");
  // A key nobody trusts makes the layer unsigned, not valid.
  const stranger = generateSigningKey();
  assertCode(() => attest(doc, [stranger], false, "numpy"), "TRUST_REFUSED");
  assert.equal(attest(doc, [stranger], true, "numpy").status, "unsigned-offline");
  assertCode(() => attest(doc, [], false, "numpy"), "TRUST_REFUSED");
});

test("trust is only keyfile://", () => {
  const ex = exampleRegistry();
  assert.equal(readTrust(`keyfile://${ex.root}/registry.pub`, "/").keyId, ex.registryKey.keyId);
  assert.equal(readTrust("keyfile://registry.pub", ex.root).keyId, ex.registryKey.keyId, "relative to the base dir");
  assertCode(() => readTrust("https://example.com/key", ex.root), "TRUST_REFUSED");
  assertCode(() => readTrust(`${ex.root}/registry.pub`, ex.root), "TRUST_REFUSED");
});

test("search lists user-selectable layers and formations with versions, highest first", () => {
  const ex = exampleRegistry();
  const hits = searchRegistries([LocalRegistry.open(ex.registry)], "");
  const python = hits.find((h) => h.name === "python");
  assert.deepEqual(python?.versions, ["3.12.4", "3.11.9"]);
  assert.ok(hits.some((h) => h.kind === "formation" && h.name === "bio-seq"));
  assert.ok(!hits.some((h) => h.name === "samtools"), "internal layers are not listed");
  assert.deepEqual(
    searchRegistries([LocalRegistry.open(ex.registry)], "num").map((h) => h.name),
    ["numpy"],
  );
});

test("layer fold merges layers (later wins), records folded_from, and verifies sources first", async () => {
  const ex = exampleRegistry();
  const reg = LocalRegistry.open(ex.registry);
  const spec = { ...toySpec(TOY_LAYERS[5]!), name: "tools", version: "1.0" };
  const trusted = { keys: [ex.registryKey], allowUnsignedOffline: false };
  // Sources are verified before anything is read: no trusted key, or the wrong one, refuses.
  await assertCodeAsync(
    () => foldLayers(reg, ["tool-a-1.0-none-noarch", "tool-b-1.0-none-noarch"], spec, { keys: [], allowUnsignedOffline: false }),
    "TRUST_REFUSED",
  );
  await assertCodeAsync(
    () => foldLayers(reg, ["tool-a-1.0-none-noarch", "tool-b-1.0-none-noarch"], spec, { keys: [generateSigningKey()], allowUnsignedOffline: false }),
    "TRUST_REFUSED",
  );
  assert.ok(await foldLayers(reg, ["tool-a-1.0-none-noarch", "tool-b-1.0-none-noarch"], spec, { keys: [], allowUnsignedOffline: true }), "named opt-in");
  const folded = await foldLayers(reg, ["tool-a-1.0-none-noarch", "tool-b-1.0-none-noarch"], spec, trusted);
  assert.deepEqual(
    folded.manifest.build.folded_from?.map((f) => f.id),
    ["tool-a-1.0-none-noarch", "tool-b-1.0-none-noarch"],
  );
  const b = reg.readLayer("tool-b-1.0-none-noarch").value;
  assert.equal(folded.manifest.content_manifest.get("/usr/local/bin/tool"), b.content_manifest.get("/usr/local/bin/tool"));
  const doc = reg.publishLayer(folded.blob.blob, folded.manifest, [ex.registryKey]);
  assert.equal(reg.readLayer(doc.value.id).value.build.folded_from?.length, 2);
  // Tamper with a source blob: folding refuses.
  const blobPath = reg.blobPath(b.sha256);
  const bytes = readFileSync(blobPath);
  bytes[20]! ^= 0xff;
  writeFileSync(blobPath, bytes);
  await assertCodeAsync(() => foldLayers(reg, ["tool-a-1.0-none-noarch", "tool-b-1.0-none-noarch"], spec, trusted), "DIGEST_MISMATCH");
});

test("envelopes in the registry are strict DSSE", () => {
  const ex = exampleRegistry();
  const reg = LocalRegistry.open(ex.registry);
  const env = parseEnvelope(parseJsonBytes(readFileSync(reg.layerSignaturePath("bwa-0.7.18-gnu-x86_64"))));
  assert.equal(env.payloadType, "application/vnd.cairn.layer-manifest+json");
  assert.equal(env.signatures[0]?.keyid, ex.registryKey.keyId);
});

test("a crash's leftover (a hidden temporary file) is invisible to readers; a visible half-written manifest is refused", () => {
  const ex = exampleRegistry();
  const reg = LocalRegistry.open(ex.registry);
  const before = reg.listLayers().length;
  writeFileSync(join(ex.registry, "layers", ".python-9.9-gnu-x86_64.json.123.abc.tmp"), '{"payloadType":');
  writeFileSync(join(ex.registry, "blobs", "sha256", `.${"0".repeat(64)}.1.tmp`), "partial");
  assert.equal(reg.listLayers().length, before);
  assert.equal(searchRegistries([reg], "python")[0]?.versions.length, 2);
  // A signature whose document was not written yet (a crash between the two) is not listed.
  writeFileSync(join(ex.registry, "layers", "python-9.9-gnu-x86_64.json.dsse"), '{"payloadType":');
  assert.equal(reg.listLayers().length, before);
  // A truncated manifest at a real name (not something cairn writes) is refused, not skipped.
  writeFileSync(join(ex.registry, "layers", "python-9.9-gnu-x86_64.json"), '{"payloadType":');
  assertCode(() => reg.listLayers(), "JSON_SYNTAX");
});

test("a fold without --provides/--requires inherits its sources' capabilities; requirements met inside the fold drop out", async () => {
  const ex = exampleRegistry();
  const reg = LocalRegistry.open(ex.registry);
  const spec = { ...toySpec(TOY_LAYERS[3]!), name: "bio", version: "1.0", provides: [], requires: [] };
  const trusted = { keys: [ex.registryKey], allowUnsignedOffline: false };
  const folded = await foldLayers(reg, ["samtools-1.20-gnu-x86_64", "bwa-0.7.18-gnu-x86_64"], spec, trusted, true);
  assert.deepEqual(
    folded.manifest.provides.map((c) => `${c.name}@${c.version}`),
    ["bwa@0.7.18", "samtools@1.20"],
  );
  assert.deepEqual(
    folded.manifest.requires.map((r) => requirementString(r)),
    ["glibc>=2.28"],
    "samtools>=1.0 is met by the fold itself",
  );
  const explicit = await foldLayers(reg, ["samtools-1.20-gnu-x86_64", "bwa-0.7.18-gnu-x86_64"], spec, trusted, false);
  assert.deepEqual(explicit.manifest.provides, [], "control: given (empty) capabilities are kept as given");
});

/** A layer manifest as parsed JSON, typed as far as the edits below reach. */
type LayerDoc = JsonObject & { content_manifest: JsonObject; sha256: string };

test("layer manifests are strict: a forged id, an unsafe path, a bad digest, unknown fields are refused", () => {
  const ex = exampleRegistry();
  const good = JSON.parse(JSON.stringify(layerManifestToModel(LocalRegistry.open(ex.registry).readLayer("numpy-2.0.1-none-noarch").value))) as LayerDoc;
  assert.doesNotThrow(() => parseLayerManifest(good), "control");
  const variant = (f: (m: LayerDoc) => void): LayerDoc => {
    const m = JSON.parse(JSON.stringify(good)) as LayerDoc;
    f(m);
    return m;
  };
  assertCode(() => parseLayerManifest(variant((m) => void (m.id = "numpy-9-none-noarch"))), "LAYER_INVALID");
  assertCode(() => parseLayerManifest(variant((m) => void (m.content_manifest["/opt/../etc/passwd"] = m.sha256))), "PATH_UNSAFE");
  assertCode(() => parseLayerManifest(variant((m) => void (m.content_manifest["relative/path"] = m.sha256))), "PATH_UNSAFE");
  assertCode(() => parseLayerManifest(variant((m) => void (m.sha256 = "sha256:XYZ"))), "DIGEST_INVALID");
  assertCode(() => parseLayerManifest(variant((m) => void (m.extra = 1))), "MODEL_UNKNOWN_FIELD");
  assertCode(() => parseLayerManifest(variant((m) => void (m.provides = ["numpy"]))), "MODEL_VALUE");
  assertCode(() => parseLayerManifest(variant((m) => void (m.arch = "i386"))), "MODEL_VALUE");
});

test("--contents: a blob must hold exactly what its manifest lists (an under-reporting manifest could hide a conflict)", async () => {
  const ex = exampleRegistry();
  const reg = LocalRegistry.open(ex.registry);
  const m = reg.readLayer("bwa-0.7.18-gnu-x86_64").value;
  const blob = reg.readBlob(m.sha256, m.size);
  await checkLayerContents(blob, m, "control");
  const hidden = new Map(m.content_manifest);
  hidden.delete("/usr/local/share/bio/README");
  await assertCodeAsync(() => checkLayerContents(blob, { ...m, content_manifest: hidden }, "hidden"), "DIGEST_MISMATCH");
  const wrong = new Map(m.content_manifest);
  wrong.set("/usr/local/share/bio/README", m.sha256);
  await assertCodeAsync(() => checkLayerContents(blob, { ...m, content_manifest: wrong }, "wrong"), "DIGEST_MISMATCH");
  await assertCodeAsync(() => checkLayerContents(blob, { ...m, symlinks: new Map([["/x", "y"]]) }, "link"), "DIGEST_MISMATCH");
});

test("--contents: a symlink in the blob that the manifest does not list is refused (issue 31, case 19a; no fixture layer has a symlink)", async () => {
  // The layer is built here with a symlink, so the blob really holds one.
  const built = buildLayerBlob([
    { type: "dir", path: "opt", mode: 0o755 },
    { type: "file", path: "opt/tool", mode: 0o755, data: Buffer.from("#!/bin/sh\n") },
    { type: "symlink", path: "opt/tool-link", target: "tool" },
  ]);
  const m = manifestFor(toySpec({ name: "linked", version: "1.0", files: {} }), built);
  assert.deepEqual([...m.symlinks], [["/opt/tool-link", "tool"]], "the built manifest lists the symlink");
  await checkLayerContents(built.blob, m, "control"); // control: the manifest as built
  // The refusal names where the layer is (the caller's pointer, e.g. /layers/2), which a StrykerJS survivor showed no test checked.
  await assertCodeAsync(() => checkLayerContents(built.blob, { ...m, symlinks: new Map() }, "/layers/2"), "DIGEST_MISMATCH", "/layers/2");
  // Listing it under another target, or listing a file in its place, is refused too.
  await assertCodeAsync(() => checkLayerContents(built.blob, { ...m, symlinks: new Map([["/opt/tool-link", "other"]]) }, "target"), "DIGEST_MISMATCH");
  const asFile = new Map(m.content_manifest);
  asFile.set("/opt/tool-link", [...m.content_manifest.values()][0]!);
  await assertCodeAsync(() => checkLayerContents(built.blob, { ...m, content_manifest: asFile, symlinks: new Map() }, "as-file"), "DIGEST_MISMATCH");
});

test("registry reads refuse a symlinked envelope and one that grows while read; control: the published envelope", () => {
  const ex = exampleRegistry();
  const reg = LocalRegistry.open(ex.registry);
  const id = "python-3.12.4-gnu-x86_64";
  const path = reg.layerPath(id);
  assert.equal(reg.readLayer(id).value.id, id, "control");
  const real = join(ex.registry, "elsewhere.json");
  renameSync(path, real);
  symlinkSync(real, path);
  assertCode(() => reg.readLayer(id), "REGISTRY_INVALID");
  // /proc files report size 0 and then yield bytes, as a file that grows between fstat and read does.
  assertCode(() => readBounded("/proc/self/status", 1 << 20, "registry.max_envelope_bytes"), "IO_ERROR");
});

test("a FIFO in a registry is refused as not a regular file instead of blocking the reader forever", () => {
  const dir = tempDir("cairn-fifo-");
  const fifo = join(dir, "x.json");
  const plain = join(dir, "y.json");
  execFileSync("mkfifo", [fifo]);
  writeFileSync(plain, "{}");
  // In a child with a timeout: opening a FIFO for reading blocks the thread, so an in-process test could not fail, only hang.
  const probe = (p: string): string => {
    const code = `import(${JSON.stringify(new URL("../../src/strata/registry.ts", import.meta.url).href)}).then((m) => { try { m.readBounded(${JSON.stringify(p)}, 1024, "x"); console.log("read"); } catch (e) { console.log(e.code); } });`;
    const r = spawnSync(process.execPath, ["--import", "tsx", "-e", code], { timeout: HANG_GUARD_MS, encoding: "utf8" });
    return r.error !== undefined || r.signal !== null ? "hung" : r.stdout.trim();
  };
  assert.equal(probe(plain), "read", "control: a regular file is read");
  assert.equal(probe(fifo), "REGISTRY_INVALID");
});
