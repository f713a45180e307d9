// Normalization rules of the manifest core: features, env, mounts,
// substitutions, references and limits. Each refusal has a control that is
// accepted.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { JsonModel } from "../../src/core/index.ts";
import { normalizeMount } from "../../src/manifest/mounts.ts";
import { normalizeFeatureId, parseReference } from "../../src/manifest/reference.ts";
import { ingestDevcontainer } from "../../src/manifest/env-manifest.ts";
import { assertCode } from "../helpers/errors.ts";
import { valueInChild } from "../helpers/in-child.ts";
import { addr, core, HEX, ingest, PINNED_IMAGE } from "./helpers.ts";
import { FORBIDDEN_SOURCE_PREFIXES } from "../../src/manifest/mounts.ts";

const img = { image: PINNED_IMAGE };

test("features: ids lowercased, options canonical, sorted by id", () => {
  const c = core({ ...img, features: { "GHCR.IO/Z/F:1": { b: "2", a: true }, "ghcr.io/a/f:1": "1.2" } }).core;
  assert.deepEqual(c.features, [
    { id: "ghcr.io/a/f:1", options: { version: "1.2" } },
    { id: "ghcr.io/z/f:1", options: { a: true, b: "2" } },
  ]);
  assert.equal(addr({ ...img, features: { "ghcr.io/a/f:1": { version: "1.2" } } }), addr({ ...img, features: { "ghcr.io/a/f:1": "1.2" } }));
});

test("features: a collision after normalization is refused, naming the second key", () => {
  const e = assertCode(() => core({ ...img, features: { "ghcr.io/a/f:1": {}, "GHCR.io/A/f:1": {} } }), "MANIFEST_COLLISION", "/features/GHCR.io~1A~1f:1");
  assert.match(e.message, /\/features\/ghcr\.io~1a~1f:1/);
  core({ ...img, features: { "ghcr.io/a/f:1": {}, "ghcr.io/a/f:2": {} } }); // control: distinct ids
});

test("features: absolute paths, non-https URLs, bad options and bad digests are refused", () => {
  for (const id of ["/abs", ".\\win"]) assertCode(() => core({ ...img, features: { [id]: {} } }), "MANIFEST_REFUSED");
  // Controls: local features beside devcontainer.json are accepted, as written and unpinned.
  const local = ingest({ ...img, features: { "./Local-Feature": {}, "../up": {} } });
  assert.deepEqual(
    local.core.features.map((f) => f.id),
    ["../up", "./Local-Feature"],
  );
  assert.deepEqual(local.unpinned, ["/features/0/id", "/features/1/id"]);
  assertCode(() => core({ ...img, features: { "http://example.com/f.tgz": {} } }), "MANIFEST_REFUSED");
  assertCode(() => core({ ...img, features: { "ghcr.io/a/f": { n: 3 } } }), "MODEL_TYPE", "/features/ghcr.io~1a~1f/n");
  assertCode(() => core({ ...img, features: { "ghcr.io/a/f": [] } }), "MODEL_TYPE");
  assertCode(() => core({ ...img, features: { [`ghcr.io/a/f@sha512:${HEX("a")}`]: {} } }), "MANIFEST_REFUSED");
  // Controls: an https tarball and a digest-pinned id are accepted.
  core({ ...img, features: { "https://example.com/f.tgz": {}, [`ghcr.io/a/g@sha256:${HEX("a")}`]: { x: false } } });
});

test("overrideFeatureInstallOrder: kept in order, lowercased, stripped of version; unknown or repeated entries refused", () => {
  const features = { "ghcr.io/a/f:1": {}, [`ghcr.io/a/g@sha256:${HEX("b")}`]: {} };
  assert.deepEqual(core({ ...img, features, overrideFeatureInstallOrder: ["GHCR.io/a/g", "ghcr.io/a/f:1"] }).extension.overrideFeatureInstallOrder, [
    "ghcr.io/a/g",
    "ghcr.io/a/f",
  ]);
  assertCode(() => core({ ...img, features, overrideFeatureInstallOrder: ["ghcr.io/a/f", "ghcr.io/a/f"] }), "MANIFEST_COLLISION");
  assertCode(() => core({ ...img, overrideFeatureInstallOrder: ["ghcr.io/a/f"] }), "MODEL_VALUE");
  // no OCI feature declared: nothing can pull one in through dependsOn
  assertCode(
    () => core({ ...img, features: { "./local": {} }, overrideFeatureInstallOrder: ["ghcr.io/a/h"] }),
    "MODEL_VALUE",
    "/overrideFeatureInstallOrder/0",
  );
});

test("overrideFeatureInstallOrder may name a feature the dependsOn closure pulls in (issue 33): offline it is accepted, with a lock it must be in the closure", () => {
  const features = { "ghcr.io/a/f:1": {} };
  const decl = { ...img, features, overrideFeatureInstallOrder: ["ghcr.io/a/h", "ghcr.io/a/f"] };
  // offline, without a lockfile, f's dependencies are unknown: h may be one of them
  assert.deepEqual(core(decl).extension.overrideFeatureInstallOrder, ["ghcr.io/a/h", "ghcr.io/a/f"]);
  // a lockfile's closure holds h: accepted; one that does not: refused, naming the entry
  const closure = (resources: string[]) => ingestDevcontainer(decl, { featureClosure: { references: [], resources } });
  assert.deepEqual(closure(["ghcr.io/a/f", "ghcr.io/a/h"]).manifest.extension.overrideFeatureInstallOrder, ["ghcr.io/a/h", "ghcr.io/a/f"]);
  assertCode(() => closure(["ghcr.io/a/f"]), "MODEL_VALUE", "/overrideFeatureInstallOrder/0");
});

test("containerEnv and remoteEnv: sorted, order-independent; bad names refused; values never echoed", () => {
  assert.equal(addr({ ...img, containerEnv: { B: "2", A: "1" } }), addr({ ...img, containerEnv: { A: "1", B: "2" } }));
  assert.deepEqual(Object.keys(core({ ...img, containerEnv: { b: "1", B: "2", a: "3" } }).core.containerEnv), ["B", "a", "b"]);
  assertCode(() => core({ ...img, containerEnv: { "A=B": "x" } }), "MODEL_VALUE");
  assertCode(() => core({ ...img, containerEnv: { "${localEnv:NAME}": "x" } }), "MANIFEST_REFUSED");
  assertCode(() => core({ ...img, workspaceFolder: "/w", containerEnv: { "${containerWorkspaceFolder}": "x" } }), "MANIFEST_REFUSED");
  assertCode(() => core({ ...img, containerEnv: { A: 1 } }), "MODEL_TYPE");
  assertCode(() => core({ ...img, containerEnv: { A: null } }), "MODEL_TYPE");
  assert.equal(core({ ...img, remoteEnv: { A: null } }).extension.remoteEnv.A, null); // control: null unsets in remoteEnv
  const secret = "s3cr3t-value-never-shown";
  const e = assertCode(() => core({ ...img, containerEnv: { TOKEN: `${secret}\${localEnv:TOKEN}` } }), "MANIFEST_REFUSED", "/containerEnv/TOKEN");
  assert.ok(!JSON.stringify(e.toJSON()).includes(secret));
  assert.ok(!e.message.includes(secret));
});

test("substitutions: host variables refused everywhere they are accepted, in any case", () => {
  const host = [
    "${localEnv:HOME}",
    "${env:HOME}",
    "${localWorkspaceFolder}",
    "${localWorkspaceFolderBasename}",
    "${devcontainerId}",
    "${LOCALENV:HOME}",
    "${localEnv:X:default}",
  ];
  for (const v of host) {
    assertCode(() => core({ image: `x${v}` }), "MANIFEST_REFUSED", "/image");
    assertCode(() => core({ ...img, containerEnv: { A: `a${v}b` } }), "MANIFEST_REFUSED", "/containerEnv/A");
    assertCode(() => core({ ...img, remoteEnv: { A: v } }), "MANIFEST_REFUSED", "/remoteEnv/A");
    assertCode(() => core({ ...img, mounts: [`source=${v},target=/x,type=bind`] }), "MANIFEST_REFUSED", "/mounts/0");
    // Excluded (cosmetic) fields accept them: they never reach an address.
    assert.equal(ingest({ ...img, name: v }).address, ingest(img).address);
    assert.equal(ingest({ ...img, customizations: { vscode: { settings: { k: v } } } }).address, ingest(img).address);
    assertCode(() => core({ ...img, features: { "ghcr.io/a/f": { version: v } } }), "MANIFEST_REFUSED", "/features/ghcr.io~1a~1f/version");
  }
  // Controls: a literal ${...} that no tool resolves is kept as written.
  assert.equal(core({ ...img, containerEnv: { P: "${PATH}:/x" } }).core.containerEnv.P, "${PATH}:/x");
});

test("substitutions: ${containerEnv:…} only in remoteEnv; container workspace variables need a declared workspaceFolder", () => {
  assert.equal(core({ ...img, remoteEnv: { P: "${containerEnv:PATH}:/x" } }).extension.remoteEnv.P, "${containerEnv:PATH}:/x");
  assertCode(() => core({ ...img, containerEnv: { P: "${containerEnv:PATH}" } }), "MANIFEST_REFUSED", "/containerEnv/P");
  assertCode(() => core({ ...img, containerEnv: { W: "${containerWorkspaceFolder}" } }), "MANIFEST_REFUSED", "/containerEnv/W");
  const c = core({
    ...img,
    workspaceFolder: "/work/proj/",
    containerEnv: { W: "${containerWorkspaceFolder}/bin", B: "${containerWorkspaceFolderBasename}" },
  });
  assert.equal(c.extension.workspaceFolder, "/work/proj");
  assert.deepEqual(c.core.containerEnv, { B: "proj", W: "/work/proj/bin" });
  // Expanded and literal declarations are the same environment.
  assert.equal(
    addr({ ...img, workspaceFolder: "/w", containerEnv: { W: "${containerWorkspaceFolder}" } }),
    addr({ ...img, workspaceFolder: "/w", containerEnv: { W: "/w" } }),
  );
  assertCode(() => core({ ...img, workspaceFolder: "/workspaces/${localWorkspaceFolderBasename}" }), "MANIFEST_REFUSED", "/workspaceFolder");
  assertCode(() => core({ ...img, workspaceFolder: "relative" }), "MODEL_VALUE", "/workspaceFolder");
});

test("mounts: string and object forms normalize to one tuple; sorted by target", () => {
  const s = normalizeMount("source=/srv/d/,target=/data/,type=bind,readonly", "/m");
  assert.deepEqual(s, { ok: true, mount: { source: "/srv/d", target: "/data", kind: "bind", read_only: true } });
  const aliases = normalizeMount("src=/srv/d,dst=/data,type=bind,ro=true", "/m");
  assert.deepEqual(aliases, s);
  assert.deepEqual(normalizeMount({ type: "bind", source: "/srv/d", target: "/data" }, "/m"), {
    ok: true,
    mount: { source: "/srv/d", target: "/data", kind: "bind", read_only: false },
  });
  assert.equal(addr({ ...img, mounts: ["source=vol,target=/v,type=volume"] }), addr({ ...img, mounts: [{ type: "volume", source: "vol", target: "/v" }] }));
  assert.equal(
    addr({ ...img, mounts: ["type=volume,source=aa,target=/b", "type=volume,source=cc,target=/a"] }),
    addr({ ...img, mounts: ["type=volume,source=cc,target=/a", "type=volume,source=aa,target=/b"] }),
  );
  assert.deepEqual(
    core({ ...img, mounts: ["type=volume,source=aa,target=/b", "type=volume,source=cc,target=/a"] }).core.mounts.map((m) => m.target),
    ["/a", "/b"],
  );
  // consistency is accepted and dropped.
  assert.equal(addr({ ...img, mounts: ["type=volume,source=aa,target=/b,consistency=cached"] }), addr({ ...img, mounts: ["type=volume,source=aa,target=/b"] }));
});

test("mounts: every sandbox-widening or ambiguous form is refused", () => {
  const refused: JsonModel[] = [
    "type=volume,source=aa,target=/b,volume-opt=type=none",
    "type=volume,source=aa,target=/b,volume-driver=local",
    "type=bind,source=/srv,target=/b,bind-propagation=rshared",
    "type=bind,source=/,target=/host",
    "type=bind,source=/srv/..,target=/host",
    "type=bind,source=/var/run/docker.sock,target=/var/run/docker.sock",
    "type=bind,source=/run/podman/podman.sock,target=/s",
    "type=bind,source=/proc,target=/p",
    "type=bind,source=relative,target=/b",
    "type=volume,source=aa,target=/b,mystery=1",
    'type=volume,"source=aa,bb",target=/c',
    "type=volume,source=aa,source=bb,target=/c",
    "type=volume,source=aa,target=/",
    "type=volume,source=aa,target=relative",
    "type=npipe,source=aa,target=/b",
    "type=tmpfs,source=a,target=/b",
    "type=volume,source=/srv,target=/b",
    "Type=volume,source=vol,target=/b",
    "type=volume,source=x,target=/b",
    { type: "bind", source: "/", target: "/h" },
    { type: "volume", source: "aa", target: "/b", readonly: true },
    { type: "tmpfs", target: "/b" },
    42,
  ];
  for (const m of refused) {
    const r = normalizeMount(m, "/mounts/0");
    assert.equal(r.ok, false, JSON.stringify(m));
    assertCode(() => core({ ...img, mounts: [m] }), "MANIFEST_REFUSED");
  }
  // Two mounts on one target collide.
  assertCode(() => core({ ...img, mounts: ["type=volume,source=aa,target=/x", "type=volume,source=bb,target=/x/"] }), "MANIFEST_COLLISION", "/mounts");
  // Controls.
  for (const m of ["type=bind,source=/srv/sock-dir,target=/b", "type=tmpfs,target=/t", "type=volume,target=/anon"])
    assert.equal(normalizeMount(m, "/m").ok, true, m);
});

test("references: the OCI grammar, and pinned only for @sha256:<64 lowercase hex>", () => {
  const ok = (r: string): boolean => parseReference(r).ok;
  const pinned = (r: string): boolean => {
    const p = parseReference(r);
    return p.ok && p.ref.pinned;
  };
  assert.ok(pinned(`ubuntu@sha256:${HEX("a")}`));
  assert.ok(pinned(`localhost:5000/a/b:tag@sha256:${HEX("0")}`));
  assert.ok(ok("ubuntu") && !pinned("ubuntu"));
  assert.ok(ok("mcr.microsoft.com/devcontainers/base:ubuntu-24.04") && !pinned("mcr.microsoft.com/devcontainers/base:ubuntu-24.04"));
  for (const bad of [
    "",
    "Ubuntu",
    `ubuntu@sha256:${HEX("A")}`,
    `ubuntu@sha256:${"a".repeat(63)}`,
    `ubuntu@sha512:${HEX("a")}`,
    "a b",
    "ubuntu:",
    "ubuntu@",
    "-x",
  ])
    assert.equal(ok(bad), false, bad);
  assertCode(() => core({ image: "Not A Reference" }), "MODEL_VALUE", "/image");
  assertCode(() => core({}), "MODEL_MISSING_FIELD", "/image");
  assert.deepEqual(normalizeFeatureId("GHCR.IO/A/B:Latest"), { ok: true, id: "ghcr.io/a/b:latest", base: "ghcr.io/a/b", pinned: false, kind: "oci" });
  // A long hostile reference is refused, not backtracked on forever: in a child with a timeout (a hang
  // fails as "hung"; no wall-clock threshold, the time it takes is bench/manifest's business).
  const REFERENCE = new URL("../../src/manifest/reference.ts", import.meta.url);
  const accepted = (r: string) => valueInChild(REFERENCE, `m.parseReference(${JSON.stringify(r)}).ok`);
  assert.equal(accepted(PINNED_IMAGE), "true", "control: a good reference in the child");
  assert.equal(accepted(`${"a".repeat(400)}${"-".repeat(100)}!`), "false");
  assert.equal(accepted(`${"a-".repeat(250)}!`), "false");
});

test("limits: each is named in its error", () => {
  const features: { [k: string]: JsonModel } = {};
  for (let i = 0; i < 257; i++) features[`ghcr.io/a/f${i}`] = {};
  const e = assertCode(() => core({ ...img, features }), "LIMIT_EXCEEDED", "/features");
  assert.match(e.message, /max_features/);
  const env: { [k: string]: JsonModel } = {};
  for (let i = 0; i < 4097; i++) env[`V${i}`] = "x";
  assert.match(assertCode(() => core({ ...img, containerEnv: env }), "LIMIT_EXCEEDED").message, /max_env_entries/);
  assert.match(assertCode(() => core({ ...img, name: "x".repeat(70000) }), "LIMIT_EXCEEDED").message, /max_string_length/);
  delete features["ghcr.io/a/f256"];
  assert.equal(core({ ...img, features }).core.features.length, 256); // control: at the limit
});

test("library input: prototype-supplied fields are never read; non-JSON values are refused", () => {
  // A field that only exists on the prototype (a polluted Object.prototype, or a literal built with __proto__).
  const inherited = Object.create({ image: PINNED_IMAGE, privileged: true }) as JsonModel;
  assertCode(() => core(inherited), "MODEL_TYPE", "");
  Object.defineProperty(Object.prototype, "image", { value: PINNED_IMAGE, configurable: true, enumerable: false });
  try {
    assertCode(() => core({} as JsonModel), "MODEL_MISSING_FIELD", "/image");
  } finally {
    delete (Object.prototype as { image?: unknown }).image;
  }
  // JSON.parse makes "__proto__" an own key: refused as smuggling.
  assertCode(() => core(JSON.parse(`{"image":"${PINNED_IMAGE}","__proto__":{"privileged":true}}`) as JsonModel), "JSON_PROTO_KEY", "/__proto__");
  assertCode(() => core({ image: PINNED_IMAGE, name: (() => 1) as unknown as JsonModel }), "MODEL_TYPE", "/name");
  assertCode(() => core({ image: PINNED_IMAGE, devPort: Number.NaN }), "JSON_NUMBER", "/devPort");
  assertCode(() => core({ image: PINNED_IMAGE, customizations: new Map() as unknown as JsonModel }), "MODEL_TYPE", "/customizations");
  let deep: JsonModel = [];
  for (let i = 0; i < 100; i++) deep = [deep];
  assertCode(() => core({ image: PINNED_IMAGE, customizations: { x: deep } }), "LIMIT_EXCEEDED");
  // Control: an ordinary JSON.parse object is accepted.
  assert.equal(core(JSON.parse(`{"image":"${PINNED_IMAGE}"}`) as JsonModel).core.image, PINNED_IMAGE);
});

test("real files: an un-applied template is refused as a template, naming the command that applies it", () => {
  const e = assertCode(() => core({ image: "mcr.microsoft.com/devcontainers/${templateOption:imageVariant}" }), "MANIFEST_REFUSED", "/image");
  assert.match(e.message, /templateOption/);
  assert.match(e.message, /cairn manifest apply-template/);
  // The same placeholder in a feature option is refused the same way (it was accepted as a literal).
  assertCode(() => core({ ...img, features: { "ghcr.io/a/f:1": { v: "${templateOption:x}" } } }), "MANIFEST_REFUSED", "/features/ghcr.io~1a~1f:1/v");
  // Control: in an excluded field it is cosmetic and accepted; the applied image is accepted.
  assert.equal(ingest({ ...img, name: "${templateOption:x}" }).address, ingest(img).address);
  core({ image: "mcr.microsoft.com/devcontainers/base:bookworm" });
});

test("real files: GitHub-release and legacy feature ids are labelled as the devcontainers CLI treats them", () => {
  const gh = ingest({ ...img, features: { "owner/repo/feature@v1.2": {} } });
  assert.equal(gh.core.features[0]!.id, "owner/repo/feature@v1.2");
  assert.deepEqual(gh.unpinned, ["/features/0/id"]);
  const legacy = ingest({ ...img, features: { node: "18" } });
  assert.deepEqual(legacy.unpinned, ["/features/0/id"]);
  // A bare legacy id with a digest is refused (the CLI refuses it), not labelled pinned.
  const e = assertCode(() => core({ ...img, features: { [`node@sha256:${HEX("a")}`]: {} } }), "MANIFEST_REFUSED");
  assert.match(e.message, /legacy/);
  // Control: the full OCI id with the same digest is pinned.
  assert.deepEqual(ingest({ ...img, features: { [`ghcr.io/devcontainers/features/node@sha256:${HEX("a")}`]: {} } }).unpinned, []);
});

test("feature ids: OCI references are lowercased as the devcontainers CLI does; https URLs keep their case", () => {
  assert.equal(addr({ ...img, features: { "GHCR.io/A/f:1": {} } }), addr({ ...img, features: { "ghcr.io/a/f:1": {} } }));
  const a = addr({ ...img, features: { "https://example.com/Feature.tgz": {} } });
  const b = addr({ ...img, features: { "https://example.com/feature.tgz": {} } });
  assert.notEqual(a, b);
  assert.equal(ingest({ ...img, features: { "https://example.com/Feature.tgz": {} } }).core.features[0]!.id, "https://example.com/Feature.tgz");
});

test("bind sources are refused by prefix: each listed path and anything under it", () => {
  const listed = [
    "/proc/1/root",
    "/run/user/1000",
    "/var/run/docker",
    "/run/containerd",
    "/dev/sda",
    "/sys/kernel",
    "/var/run/docker.sock",
    "/var/lib/docker/volumes",
  ];
  for (const p of [...listed, ...FORBIDDEN_SOURCE_PREFIXES, "/", "/proc/../run/x"]) {
    assertCode(() => core({ ...img, mounts: [`type=bind,source=${p},target=/x`] }), "MANIFEST_REFUSED", "/mounts/0");
    assertCode(() => core({ ...img, mounts: [{ type: "bind", source: p, target: "/x" }] }), "MANIFEST_REFUSED", "/mounts/0");
  }
  // Controls: paths that only share a name prefix are accepted.
  for (const p of ["/process", "/runner/x", "/devices", "/var/runx", "/srv/data"]) core({ ...img, mounts: [`type=bind,source=${p},target=/x`] });
});

test("bad input: 100k features and a 50 MB string are refused by a named limit", () => {
  const features: { [k: string]: JsonModel } = {};
  for (let i = 0; i < 100_000; i++) features[`ghcr.io/a/f${i}`] = {};
  assert.match(assertCode(() => core({ ...img, features }), "LIMIT_EXCEEDED", "/features").message, /max_features/);
  const big = "x".repeat(50 * 1024 * 1024);
  assert.match(assertCode(() => core({ ...img, containerEnv: { A: big } }), "LIMIT_EXCEEDED").message, /max_string_length/);
  assert.match(assertCode(() => core({ ...img, name: big }), "LIMIT_EXCEEDED").message, /max_string_length/);
  core({ ...img, containerEnv: { A: "x".repeat(65536) } }); // control: at the limit
});
