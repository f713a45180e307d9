// Conformance suite C7, the address: for every accepted input of every vector
// (standard and profile groups), the address is recomputed from the normal
// form below (the standard's, with the profile rules that shape an accepted
// core: P1 lowercasing, P3 the version shorthand, P7 Docker's mount syntax,
// P10 workspace expansion; README.md), with nothing of cairn's: a JSONC parse by jsonc-parser, the standard's normal form of the
// five fields written out below, a small RFC 8785 encoder written here, and
// BLAKE3 from @noble/hashes called directly. The encoder is checked against
// the official JCS vectors and the hash against the official BLAKE3 vectors
// (../shared/vectors; skipped, saying so, when absent). Another implementation
// can run the same vectors: they are data files (see README.md).
//
// The core (sandbox.env-manifest/1), as this oracle reads it:
//   schema        "sandbox.env-manifest/1"
//   image         the string as written
//   features      [{id, options}] sorted by the UTF-8 bytes of id; an OCI
//                 reference id lowercased (as the devcontainers CLI does), any
//                 other id (./local, https://…, owner/repo/f@v, bare legacy)
//                 as written; options an object, a string s meaning {version: s}
//   containerEnv  {name: value}; ${containerWorkspaceFolder} and its Basename
//                 expanded from a declared workspaceFolder
//   mounts        [{source, target, kind}] sorted by the UTF-8 bytes of target;
//                 string form `k=v,…` (type defaults to volume; src/source,
//                 dst/destination/target), or object form {type, source,
//                 target}; paths normalized; source null when absent
//   remoteUser    the string, or null when absent
//   address       "blake3:" + hex(BLAKE3(JCS(core)))
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join, posix } from "node:path";
import { blake3 } from "@noble/hashes/blake3.js";
import { parse, type ParseError } from "jsonc-parser";
import { ingestDevcontainer } from "../../../src/manifest/index.ts";
import { parseJsonText } from "../../../src/core/index.ts";
import { skipUnlessVectors, vectorsPath } from "../../helpers/vectors.ts";
import { jcs } from "./jcs.ts";
import { KINDS, vectorFiles } from "./vector-files.ts";

const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");

// ── the standard's normal form, from the devcontainer.json text ────────────
type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function parseText(text: string): { [k: string]: Json } {
  const errors: ParseError[] = [];
  const v = parse(text.replace(/^\uFEFF/, ""), errors, { allowTrailingComma: true, disallowComments: false }) as Json;
  assert.equal(errors.length, 0, "the oracle could not parse the input");
  assert.ok(typeof v === "object" && v !== null && !Array.isArray(v));
  return v as { [k: string]: Json };
}

const utf8Order = (a: string, b: string): number => Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));

function normPath(p: string): string {
  const n = posix.normalize(p);
  return n.length > 1 && n.endsWith("/") ? n.slice(0, -1) : n;
}

function isOciId(id: string): boolean {
  if (id.startsWith("./") || id.startsWith("../") || id.startsWith("https://")) return false;
  if (!id.includes("/")) return false; // bare legacy id
  const at = id.lastIndexOf("@");
  if (at >= 0 && !id.slice(at + 1).includes(":") && id.split("/").length === 3) return false; // owner/repo/feature@version
  return true;
}

function mount(m: Json): { source: string | null; target: string; kind: string } {
  let type: string | undefined;
  let source: string | undefined;
  let target: string | undefined;
  if (typeof m === "string") {
    type = "volume";
    for (const part of m.split(",")) {
      const [k, v] = [part.slice(0, part.indexOf("=") < 0 ? part.length : part.indexOf("=")), part.slice(part.indexOf("=") + 1)];
      if (k === "type") type = v;
      else if (k === "source" || k === "src") source = v;
      else if (k === "target" || k === "dst" || k === "destination") target = v;
    }
  } else {
    const o = m as { [k: string]: string };
    type = o.type;
    source = o.source;
    target = o.target;
  }
  assert.ok(type !== undefined && target !== undefined);
  const src = source === undefined || source === "" ? null : type === "bind" ? normPath(source) : source;
  return { source: src, target: normPath(target), kind: type };
}

function standardCore(d: { [k: string]: Json }): Json {
  const folder = typeof d.workspaceFolder === "string" ? normPath(d.workspaceFolder) : undefined;
  const expand = (s: string): string =>
    folder === undefined ? s : s.replace(/\$\{containerWorkspaceFolderBasename\}/g, posix.basename(folder)).replace(/\$\{containerWorkspaceFolder\}/g, folder);
  const features = Object.entries((d.features ?? {}) as { [k: string]: Json })
    .map(([id, opts]) => ({ id: isOciId(id) ? id.toLowerCase() : id, options: typeof opts === "string" ? { version: opts } : opts }))
    .sort((a, b) => utf8Order(a.id, b.id));
  const containerEnv: { [k: string]: Json } = {};
  for (const [k, v] of Object.entries((d.containerEnv ?? {}) as { [k: string]: string })) containerEnv[k] = expand(v);
  const mounts = ((d.mounts ?? []) as Json[]).map(mount).sort((a, b) => utf8Order(a.target, b.target));
  return {
    schema: "sandbox.env-manifest/1",
    image: d.image as string,
    features,
    containerEnv,
    mounts,
    remoteUser: typeof d.remoteUser === "string" ? d.remoteUser : null,
  };
}

const independentAddress = (text: string): string => `blake3:${hex(blake3(Buffer.from(jcs(standardCore(parseText(text))), "utf8")))}`;

// ── the checks ────────────────────────────────────────────────────────────
test("the independent JCS encoder reproduces the official RFC 8785 vectors", { skip: skipUnlessVectors("jcs", "input") }, () => {
  const dir = vectorsPath("jcs")!;
  const names = readdirSync(join(dir, "input")).filter((f) => f.endsWith(".json"));
  assert.ok(names.length >= 5);
  for (const n of names) {
    const out = jcs(JSON.parse(readFileSync(join(dir, "input", n), "utf8")));
    assert.equal(out, readFileSync(join(dir, "output", n), "utf8"), n);
  }
  // Control: an encoder that sorts keys by UTF-8 bytes instead fails a vector with non-BMP keys.
  assert.notEqual(jcs({ "\u{1F600}": 1, "\uFB33": 2 }), '{"\uFB33":2,"\u{1F600}":1}');
});

test("@noble/hashes BLAKE3 reproduces the official BLAKE3 vectors", { skip: skipUnlessVectors("blake3", "test_vectors.json") }, () => {
  const doc = JSON.parse(readFileSync(vectorsPath("blake3", "test_vectors.json")!, "utf8")) as { cases: { input_len: number; hash: string }[] };
  for (const c of doc.cases) {
    const input = Uint8Array.from({ length: c.input_len }, (_, i) => i % 251);
    assert.equal(hex(blake3(input)), c.hash.slice(0, 64), `input_len ${c.input_len}`);
  }
  assert.notEqual(hex(blake3(Uint8Array.of(1))), doc.cases[0]!.hash.slice(0, 64)); // control
});

test("every accepted C7 input (both groups): cairn's address equals the one recomputed from the profile's normal form by the independent encoder", () => {
  let checked = 0;
  for (const kind of KINDS) {
    for (const [f, doc] of vectorFiles(kind)) {
      for (const c of doc.cases) {
        const texts = c.input !== undefined ? (c.expect.refused === undefined ? [c.input] : []) : [c.snapshot!, c.offered!];
        for (const text of texts) {
          const expected = independentAddress(text);
          const m = ingestDevcontainer(parseJsonText(text, { jsonc: true })).manifest;
          assert.equal(m.address, expected, `${kind}/${f} / ${c.name}`);
          if (c.input !== undefined && c.expect.address !== undefined) assert.equal(c.expect.address, expected, `${kind}/${f} / ${c.name}: vector`);
          checked++;
        }
      }
    }
  }
  assert.ok(checked >= 60, `only ${checked} inputs checked`);
});

test("control: the oracle notices a core that is not the standard's (an extra field, a lowercased URL, a missing remoteUser)", () => {
  const text = JSON.stringify({ image: "debian:12", features: { "https://example.com/F.tgz": {} }, remoteUser: "u" });
  const good = independentAddress(text);
  assert.equal(ingestDevcontainer(parseJsonText(text)).manifest.address, good);
  const core = standardCore(parseText(text)) as { [k: string]: Json };
  const variants = [
    { ...core, containerUser: "root" },
    { ...core, features: [{ id: "https://example.com/f.tgz", options: {} }] },
    { ...core, remoteUser: undefined },
    { ...core, schema: "cairn.env-manifest/1" },
  ].map((v) => `blake3:${hex(blake3(Buffer.from(jcs(JSON.parse(JSON.stringify(v))), "utf8")))}`); // the stringify drops undefined
  for (const v of variants) assert.notEqual(v, good);
});
