// The public surface is a reviewed diff: api/cairn.api.md is regenerated from
// src/index.ts with the TypeScript checker and must equal the checked-in copy
// (update it with `node --import tsx scripts/api-report.ts --write`). The
// package root stays small: namespaces and the typed error.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildApiReport, REPORT_PATH } from "../../scripts/api-report.ts";

const report = buildApiReport();

test("api/cairn.api.md is the report the sources generate", () => {
  const checkedIn = readFileSync(REPORT_PATH, "utf8");
  assert.ok(report.allNames.length > 50, "control: the report lists the public names");
  assert.equal(report.text, checkedIn, "the public API changed: review it, then run `node --import tsx scripts/api-report.ts --write`");
});

test("the package root exposes namespaces and the typed error only (at most 80 names)", () => {
  assert.ok(report.rootNames.length <= 80, `${report.rootNames.length} root names`);
  assert.deepEqual([...report.rootNames], ["CairnError", "ErrorCode", "core", "isCairnError", "manifest", "oci", "store", "strata", "tree", "vm", "workload"]);
});

test("control: a changed report is a difference", () => {
  assert.notEqual(`${report.text}\nexport const added = 1;\n`, report.text);
  assert.ok(report.text.includes("namespace workload ("), "namespaces are listed with their size");
});

test("no public signature names a type the package does not export", () => {
  assert.deepEqual([...report.unexported], [], "export each named type (export type in the area's public.ts) or stop naming it");
});

test("control: a signature naming an unexported type is reported; a function body, a private member and exported types are not", () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-api-fixture-"));
  try {
    writeFileSync(join(dir, "index.ts"), 'export * as area from "./area.ts";\n');
    writeFileSync(
      join(dir, "area.ts"),
      [
        "interface Hidden { readonly a: number }",
        "interface InBody { readonly c: number }",
        "interface Secret { readonly d: number }",
        "export interface Shown { readonly b: number; readonly nested?: Hidden }",
        "export function takes(x: Hidden): Shown { return { b: x.a }; }",
        "export function inferred() { const h: Hidden = { a: 1 }; return h; }",
        "export function body(): Shown { const local: InBody = { c: 1 }; return { b: local.c }; }",
        "export class Box { #s: Secret = { d: 1 }; private t: Secret = { d: 2 }; get value(): number { return this.#s.d + this.t.d; } }",
        "",
      ].join("\n"),
    );
    const fixture = buildApiReport(join(dir, "index.ts"));
    assert.deepEqual(
      fixture.unexported.map((u) => u.replace(/ \(.*\)$/, "")),
      ["area.Shown -> Hidden", "area.inferred -> Hidden", "area.takes -> Hidden"],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/**
 * One casing for result objects (issue 36, item 5): a library result object
 * spells its fields in camelCase; an interface whose fields mirror a
 * document (a file format cairn reads or writes, or a document it prints
 * as it is) keeps that document's spelling. Every public interface with a
 * snake_case field is listed here with the document it mirrors; a new one
 * fails until it is camelCase or listed.
 */
const DOCUMENTS: Record<string, string> = {
  // cairn.env-manifest/2 and its parts (docs/manifest.md), devcontainer.json's own names beside cairn's
  "manifest.EnvExtension": "cairn.env-extension/1",
  "manifest.EnvManifest": "cairn.env-manifest/2",
  "manifest.ManifestSignature": "cairn.env-manifest/2 signature",
  "manifest.NormalizedMount": "cairn.env-extension/1 mounts",
  "manifest.Pinning": "cairn.env-manifest/2 labels",
  "manifest.SnapshotRef": "cairn.env-manifest/2 resume snapshot",
  "manifest.ManifestLimits": "the manifest.* limit names as errors and docs/manifest.md spell them",
  // Strata's lockfile, layer manifest, profile and registry index (seed 002), and cairn's sidecar beside the lockfile
  "strata.BaseCapabilities": "lockfile base",
  "strata.BuildEnvironment": "layer manifest build",
  "strata.BuildProvenance": "layer manifest build",
  "strata.CaptureRecord": "layer manifest build.capture",
  "strata.IndexedFormation": "registry index.json",
  "strata.IndexedLayer": "registry index.json",
  "strata.InstanceConfig": "profile instance",
  "strata.LayerBlobFacts": "layer manifest (content_manifest, diff_id)",
  "strata.LayerManifest": "layer manifest",
  "strata.LayerRecord": "LOCK.cairn.json",
  "strata.LayerRef": "lockfile",
  "strata.LayerSpec": "layer manifest",
  "strata.LockBase": "lockfile base",
  "strata.LockFile": "lockfile",
  "strata.LockFileBuildEnvironment": "lockfile",
  "strata.LockFileLayerManifest": "lockfile",
  "strata.LockFileRequirement": "lockfile",
  "strata.LockLayer": "lockfile layer",
  "strata.LockRecords": "LOCK.cairn.json",
  "strata.LockSignature": "LOCK.cairn.json signature record",
  "strata.Lockfile": "lockfile",
  "strata.MutableLayerSpec": "lockfile mutable_layer",
  "strata.PackagePin": "LOCK.cairn.json pins",
  "strata.ProbeResult": "os-release (os_id, version_id)",
  "strata.Profile": "profile YAML",
  "strata.ProfileMutableLayerSpec": "profile YAML mutable_layer",
  "strata.ResolvedBase": "lockfile base",
  "strata.ResolvedLayer": "lockfile layer",
  "strata.SearchHit": "layer manifest (user_selectable)",
  "strata.StorageMount": "profile YAML storage",
  // documents cairn prints as they are, mirroring the lockfile's names
  "strata.CaptureReport": "the layer capture record it extends, printed by layer capture --json",
  "strata.ExplainedLayer": "lock explain --json (lockfile names)",
  "strata.Explanation": "the identity scope (docs/identities.md: covers, does_not_promise)",
  "strata.LayerFacts": "lock explain --json (lockfile names)",
  "strata.LockExplained": "lock explain --json (lockfile names)",
  "strata.ProvenanceRecord": "lock provenance --json (lockfile names)",
  "strata.LockDiff": "lock diff --json, printed as it is (a result object still spelled as its CLI document)",
  "strata.LockChanges": "lock diff --json, printed as it is (a result object still spelled as its CLI document)",
  "strata.PackageChange": "lock diff --json, printed as it is (a result object still spelled as its CLI document)",
  "strata.PackageSetChange": "lock diff --json, printed as it is (a result object still spelled as its CLI document)",
  // runs: run.json, the VM identity, the bundle index, the receipt, replay documents
  "vm.AssertionResult": "replays/N and failure bundle documents",
  "vm.BundleKitFacts": "cairn-bundle.json kit",
  "vm.ReplayVerdict": "replays/N verdict and replay --json",
  "vm.RunEnvironment": "receipt predicate environment",
  "vm.RunManifest": "run.json (cairn.run/1)",
  "vm.VmIdentity": "the VM identity's JSON",
  "vm.VmNetwork": "the VM identity's JSON network",
};

/** Public interfaces (namespace.Name) with a snake_case field, from the report's text. */
function snakeCaseInterfaces(text: string): string[] {
  const out = new Set<string>();
  let ns = "";
  let current: string | undefined;
  for (const line of text.split("\n")) {
    const section = /^## (\w+)/.exec(line);
    if (section) ns = section[1]!;
    const open = /^(?:interface|class) (\w+)/.exec(line);
    if (open) current = `${ns}.${open[1]}`;
    else if (line.startsWith("}")) current = undefined;
    else if (current !== undefined && /^\s+(?:readonly )?\w*[a-z0-9]_[a-z0-9]\w*\??:/.test(line)) out.add(current);
  }
  return [...out].sort();
}

test("result objects are camelCase: every public interface with a snake_case field mirrors a listed document", () => {
  const found = snakeCaseInterfaces(report.text);
  assert.ok(found.includes("vm.RunManifest"), "control: run.json's model is found");
  assert.deepEqual(
    found.filter((n) => DOCUMENTS[n] === undefined),
    [],
    "spell a result object's fields in camelCase (the CLI maps them to its documents), or list the document it mirrors",
  );
  assert.deepEqual(
    Object.keys(DOCUMENTS).filter((n) => !found.includes(n)),
    [],
    "a listed interface no longer has a snake_case field: take it off the list",
  );
  // control: a result object with one snake_case field beside camelCase ones is found
  assert.deepEqual(snakeCaseInterfaces("## vm\n\n```ts\ninterface Pushed {\n  readonly runId: string\n  readonly member_bytes: number\n}\n```\n"), [
    "vm.Pushed",
  ]);
});
