// The address scope: every schema property is classified; the core holds
// exactly the identity fields; each class behaves as its name says.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ingestDevcontainer } from "../../src/manifest/env-manifest.ts";
import type { JsonModel } from "../../src/core/index.ts";
import { EXTENSION_ADDRESS_SCOPE, FIELD_SCOPE, fieldsOfClass, MANIFEST_ADDRESS_SCOPE, scopeOf } from "../../src/manifest/scope.ts";
import { assertCode } from "../helpers/errors.ts";
import { assertCatchesExtraField, assertScopeExhaustive } from "../helpers/identity-scope.ts";
import { skipUnlessVectors, vectorsPath } from "../helpers/vectors.ts";
import { addr, core, fullDeclaration, ingest, PINNED_IMAGE } from "./helpers.ts";

type Schema = { [k: string]: unknown };

/**
 * The top-level properties of a devcontainer.json schema: every `properties`
 * key reachable from the root through allOf/oneOf/anyOf and $ref, without
 * descending into a property's own schema. An oracle independent of the code
 * under test: it reads the schema, not FIELD_SCOPE.
 */
function topLevelProperties(schema: Schema): Set<string> {
  const found = new Set<string>();
  const seen = new Set<unknown>();
  const visit = (node: unknown): void => {
    if (typeof node !== "object" || node === null || seen.has(node)) return;
    seen.add(node);
    const n = node as Schema;
    if (typeof n.$ref === "string") {
      const name = n.$ref.replace("#/definitions/", "");
      visit((schema.definitions as Schema)[name]);
    }
    if (typeof n.properties === "object" && n.properties !== null) for (const k of Object.keys(n.properties)) found.add(k);
    for (const comb of ["allOf", "oneOf", "anyOf"]) if (Array.isArray(n[comb])) for (const c of n[comb] as unknown[]) visit(c);
  };
  visit(schema);
  return found;
}

function unclassified(props: Iterable<string>): string[] {
  return [...props].filter((p) => scopeOf(p) === undefined);
}

test("every top-level property of the devcontainer schema is classified", { skip: skipUnlessVectors("devcontainer", "devContainer.base.schema.json") }, () => {
  const schema = JSON.parse(readFileSync(vectorsPath("devcontainer", "devContainer.base.schema.json")!, "utf8")) as Schema;
  const props = topLevelProperties(schema);
  // Control: the walker really reaches every branch (common, non-compose, image, dockerfile, compose).
  for (const p of ["image", "build", "dockerFile", "dockerComposeFile", "workspaceMount", "features", "remoteUser"]) assert.ok(props.has(p), p);
  assert.ok(props.size >= 40, `only ${props.size} properties found`);
  assert.deepEqual(unclassified(props), []);
  // And the other way: every non-legacy entry of the table is a real schema property.
  const stale = Object.entries(FIELD_SCOPE)
    .filter(([k, v]) => !("legacy" in v) && !props.has(k))
    .map(([k]) => k);
  assert.deepEqual(stale, []);
  // Control: a schema with one more property is caught.
  const extended = { ...schema, properties: { brandNewField: {} } };
  assert.deepEqual(unclassified(topLevelProperties(extended)), ["brandNewField"]);
});

test("the legacy properties named by the issue are classified too", () => {
  for (const p of ["extensions", "settings", "devPort", "codespaces"]) {
    assert.equal(scopeOf(p)?.class, "excluded", p);
    assert.equal(scopeOf(p)?.legacy, true, p);
  }
});

test("every field has a reason; classes follow the issue", () => {
  for (const [k, v] of Object.entries(FIELD_SCOPE)) assert.ok(v.reason.length > 20, k);
  for (const k of ["image", "features", "containerEnv", "mounts", "remoteUser"]) assert.equal(scopeOf(k)?.class, "identity", k);
  for (const k of ["name", "customizations", "forwardPorts", "appPort", "portsAttributes", "otherPortsAttributes"])
    assert.equal(scopeOf(k)?.class, "excluded", k);
  for (const k of [
    "build",
    "dockerFile",
    "context",
    "dockerComposeFile",
    "service",
    "runServices",
    "initializeCommand",
    "onCreateCommand",
    "updateContentCommand",
    "postCreateCommand",
    "postStartCommand",
    "postAttachCommand",
    "runArgs",
    "privileged",
    "capAdd",
    "securityOpt",
  ]) {
    assert.equal(scopeOf(k)?.class, "refused", k);
  }
  // Lookups never reach Object.prototype.
  assert.equal(scopeOf("constructor"), undefined);
  assert.equal(scopeOf("toString"), undefined);
});

test("the core holds exactly the identity fields (a field added to the core without being placed fails here)", () => {
  const identity = new Set(fieldsOfClass("identity"));
  /** Keys of a built core that are not identity fields, and identity fields it lacks. */
  const misplaced = (built: object): string[] => {
    const keys = Object.keys(built).filter((k) => k !== "schema");
    return [...keys.filter((k) => !identity.has(k)).map((k) => `+${k}`), ...[...identity].filter((k) => !keys.includes(k)).map((k) => `-${k}`)];
  };
  const built = core(fullDeclaration()).core;
  assert.deepEqual(misplaced(built), []);
  // Control: the same check on the real core with one key added, and with one identity field dropped.
  assert.deepEqual(misplaced({ ...built, newField: 1 }), ["+newField"]);
  const { image: _, ...withoutImage } = built as unknown as Record<string, unknown>;
  assert.deepEqual(misplaced(withoutImage), ["-image"]);
  // The standard's five, exactly; the extension holds the rest (plus the mounts' read-only flags).
  assert.deepEqual([...identity].sort(), ["containerEnv", "features", "image", "mounts", "remoteUser"]);
  const ext = core(fullDeclaration()).extension;
  assert.deepEqual(
    Object.keys(ext)
      .filter((k) => k !== "schema" && k !== "read_only_mounts")
      .sort(),
    fieldsOfClass("extension").sort(),
  );
});

test("every identity field changes the standard's address, every extension field only the extension's", () => {
  const base = fullDeclaration();
  const a0 = addr(base);
  const edits: { [K in string]: JsonModel } = {
    image: PINNED_IMAGE.replace(/1{64}$/, "3".repeat(64)),
    features: {
      "ghcr.io/devcontainers/features/python:1": { version: "3.11" },
      [Object.keys(base.features as object)[0]!]: { version: "20", nodeGypDependencies: false },
    },
    overrideFeatureInstallOrder: ["ghcr.io/devcontainers/features/node", "ghcr.io/devcontainers/features/python"],
    containerEnv: { LANG: "C.UTF-8", TZ: "Europe/Paris" },
    remoteEnv: { PATH: "${containerEnv:PATH}:/opt/bin" },
    mounts: ["source=cache,target=/cache,type=volume,readonly", { type: "bind", source: "/srv/data", target: "/data" }, "type=tmpfs,target=/scratch"],
    workspaceMount: "source=/srv/src,target=/workspaces/x,type=bind",
    workspaceFolder: "/workspaces/y",
    containerUser: "vscode",
    remoteUser: "root",
    userEnvProbe: "none",
    init: false,
    overrideCommand: true,
    updateRemoteUserUID: true,
  };
  assert.deepEqual(Object.keys(edits).sort(), [...fieldsOfClass("identity"), ...fieldsOfClass("extension")].sort());
  const x0 = ingest(base).extension_address;
  for (const [k, v] of Object.entries(edits)) {
    const edited = { ...base, [k]: v };
    if (k === "workspaceFolder") edited.workspaceMount = "source=/srv/src,target=/workspaces/y,type=bind,readonly";
    const m = ingest(edited);
    if (k === "mounts") {
      // Only the read-only flag changed: that is the extension's.
      assert.equal(m.address, a0, k);
      assert.notEqual(m.extension_address, x0, k);
    } else if (fieldsOfClass("identity").includes(k)) assert.notEqual(m.address, a0, k);
    else {
      assert.equal(m.address, a0, `${k} must not move the standard's address`);
      assert.notEqual(m.extension_address, x0, k);
    }
  }
  // Control: an unchanged copy keeps the address.
  assert.equal(addr({ ...base }), a0);
});

/** A value for every excluded field, each accepted by ingest. */
const EXCLUDED_VALUES: { [k: string]: JsonModel } = {
  name: "x",
  customizations: { vscode: { extensions: ["a.b"] } },
  forwardPorts: [3000, "db:5432"],
  appPort: [8080],
  portsAttributes: { "3000": { label: "web" } },
  otherPortsAttributes: { onAutoForward: "silent" },
  shutdownAction: "none",
  hostRequirements: { cpus: 4, memory: "8gb" },
  secrets: { TOKEN: { description: "a token" } },
  waitFor: "postCreateCommand",
  $schema: "https://example.com/schema.json",
  extensions: ["a.b"],
  settings: { "editor.tabSize": 2 },
  devPort: 8000,
  codespaces: { openFiles: ["README.md"] },
};

test("excluded fields are accepted and never change the address", () => {
  const base = { image: PINNED_IMAGE };
  const a0 = addr(base);
  const values = EXCLUDED_VALUES;

  assert.deepEqual(Object.keys(values).sort(), fieldsOfClass("excluded").sort());
  for (const [k, v] of Object.entries(values)) {
    const r = core({ ...base, [k]: v });
    assert.deepEqual(r.excluded, [k]);
    assert.equal(addr({ ...base, [k]: v }), a0, k);
  }
  // Excluded fields are still type-checked (control for the loop above).
  assertCode(() => core({ ...base, name: 42 }), "MODEL_TYPE", "/name");
  assertCode(() => core({ ...base, shutdownAction: "explode" }), "MODEL_VALUE", "/shutdownAction");
});

test("every refused field is refused with its path; unknown fields too", () => {
  const base = { image: PINNED_IMAGE };
  for (const k of fieldsOfClass("refused")) {
    assertCode(() => core({ ...base, [k]: "x" }), "MANIFEST_REFUSED", `/${k}`);
  }
  assertCode(() => core({ ...base, imagee: "typo" }), "MODEL_UNKNOWN_FIELD", "/imagee");
  // Control: the base alone is accepted.
  assert.equal(core(base).core.image, PINNED_IMAGE);
});

test("one refusal lists every offending field", () => {
  const e = assertCode(
    () => core({ image: PINNED_IMAGE, build: {}, privileged: true, postCreateCommand: "x", mystery: 1, containerEnv: { A: "${localEnv:HOME}" } }),
    "MANIFEST_REFUSED",
  );
  assert.deepEqual(e.issues.map((i) => i.path).sort(), ["/build", "/containerEnv/A", "/mystery", "/postCreateCommand", "/privileged"]);
});

/**
 * Instances for the address scope: a devcontainer.json with every identity
 * and excluded field (and, never ingested, every refused one), and the core
 * an ingest of it produces (which adds `schema`).
 */
function addressInstances(): unknown[] {
  const accepted = { ...fullDeclaration(), ...EXCLUDED_VALUES };
  const refused = Object.fromEntries(fieldsOfClass("refused").map((k) => [k, "x"]));
  return [{ ...accepted, ...refused }, core(accepted).core];
}

function extensionInstances(): unknown[] {
  const accepted = { ...fullDeclaration(), ...EXCLUDED_VALUES };
  // A local feature pinned by its directory (--features-dir) adds local_features.
  const featuresDir = mkdtempSync(join(tmpdir(), "cairn-scope-feature-"));
  mkdirSync(join(featuresDir, "f"));
  writeFileSync(join(featuresDir, "f", "devcontainer-feature.json"), '{ "id": "f" }\n');
  const local = { ...accepted, features: { ...(accepted.features as object), "./f": {} } };
  // A lockfile whose features depend on others adds feature_closure (issue 33).
  const dep = `ghcr.io/devcontainers/features/common-utils@sha256:${"c".repeat(64)}`;
  const closure = ingestDevcontainer(accepted, { featureClosure: { references: [dep], resources: [] } }).manifest.extension;
  return [core(accepted).extension, ingestDevcontainer(local, { featuresDir }).manifest.extension, closure];
}

test("the address scope (one IdentityScope shape) places every field of a full devcontainer.json and its core", () => {
  assertScopeExhaustive(MANIFEST_ADDRESS_SCOPE, ...addressInstances());
  for (const k of fieldsOfClass("identity")) assert.ok(`/${k}` in MANIFEST_ADDRESS_SCOPE.covers, k);
  for (const k of [...fieldsOfClass("extension"), ...fieldsOfClass("excluded"), ...fieldsOfClass("refused")])
    assert.ok(`/${k}` in MANIFEST_ADDRESS_SCOPE.excludes, k);
  assertScopeExhaustive(EXTENSION_ADDRESS_SCOPE, ...extensionInstances());
  assertCatchesExtraField(EXTENSION_ADDRESS_SCOPE, ...extensionInstances());
});

test("control: a devcontainer.json with one more field fails the scope check", () => {
  assertCatchesExtraField(MANIFEST_ADDRESS_SCOPE, ...addressInstances());
});
