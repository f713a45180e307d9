// Validate (src/strata/lockfile.ts) field by field on a hand-written frozen
// lockfile model: each edit plants exactly one defect and must be refused
// with its code at its path; the accepted edits (optional fields absent, the
// other allowed values) are the controls. The values read back and isFrozen
// are pinned too. Written to kill StrykerJS survivors (bench/mutation/README.md).
import { test } from "node:test";
import assert from "node:assert/strict";
import type { ErrorCode, JsonModel } from "../../src/core/index.ts";
import { baseDigest, isFrozen, parseLockfile, parseLockfileUnvalidated } from "../../src/strata/index.ts";
import { modulefilePath } from "../../src/strata/modulefile.ts";
import { assertCode } from "../helpers/errors.ts";

// biome-ignore lint/suspicious/noExplicitAny: the edits plant wrong values on purpose
type Doc = Record<string, any>;
const SIG = { status: "signed", keyid: `sha256:${"1".repeat(64)}`, envelope_sha256: `sha256:${"2".repeat(64)}` };
const LAYER = (i: number) => ({
  id: `l${i}-1-gnu-x86_64`,
  name: `l${i}`,
  version: "1",
  sha256: `sha256:${String(i).repeat(64)}`,
  size: 10,
  manifest_sha256: `sha256:${"3".repeat(64)}`,
  mount_order: i,
  from_formation: "f@1",
  satisfied_by: { "glibc>=2": ["base"] },
  signature: SIG,
  registry: "/r",
});
const FACTS = { name: "debian12", arch: "x86_64", abi: "gnu", os_id: "debian", version_id: "12", capabilities: ["os:debian@12", "glibc@2.36"] } as const;

let BASE_DIGEST: string | undefined;

function doc(): Doc {
  return {
    format: "cairn.lock/1",
    profile: "p",
    profile_sha256: `sha256:${"4".repeat(64)}`,
    resolved_at: "2026-03-01T12:00:00.000Z",
    cairn_version: "t",
    verification_policy: "signed",
    base: { ...FACTS, capabilities: [...FACTS.capabilities], source: "rootfs:x", digest: BASE_DIGEST, probed_at: "2026-03-01T12:00:00Z" },
    layers: [LAYER(1), LAYER(2)],
    formations: [{ name: "f", version: "1", signature: SIG }],
    env: { A: "1" },
    on_ready: ["echo"],
    defaults: ["gcc@14.2.0"],
    packages: [{ manager: "pip", packages: [{ name: "x", version: "1" }] }],
    mutable_layer: { name: "w", version: "1", size_gb: 20, volume_type: "gp3" },
    requires_host: [{ key: "gpu", value: "true" }],
    not_acted_upon: { instance: { cpus: 2 } },
  };
}

// The base digest of FACTS, from the lock read without one (the reader refuses a digest that does not match).
{
  const m = doc();
  delete m.base.digest;
  BASE_DIGEST = baseDigest(parseLockfile(m as JsonModel).base);
}

const parse = (edit: (m: Doc) => void) => {
  const m = doc();
  edit(m);
  return parseLockfile(JSON.parse(JSON.stringify(m)) as JsonModel);
};

const ACCEPTED: [string, (m: Doc) => void][] = [
  ["control", () => {}],
  ["no profile_sha256", (m) => delete m.profile_sha256],
  ["resolved_at 9 frac", (m) => (m.resolved_at = "2026-03-01T12:00:00.123456789Z")],
  ["policy unsigned", (m) => (m.verification_policy = "unsigned-offline")],
  [
    "arch aarch64",
    (m) => {
      m.base.arch = "aarch64";
      delete m.base.digest;
    },
  ],
  [
    "abi musl",
    (m) => {
      m.base.abi = "musl";
      delete m.base.digest;
    },
  ],
  ["source 4096", (m) => (m.base.source = "x".repeat(4096))],
  [
    "sig unsigned ok",
    (m) => {
      const { keyid: _k, ...s } = SIG;
      m.layers[0].signature = { ...s, status: "unsigned-offline" };
    },
  ],
  ["modulefile right", (m) => (m.layers[0].modulefile = { path: modulefilePath("l1", "1"), sha256: "sha256:" + "5".repeat(64) })],
  ["no formations", (m) => delete m.formations],
  [
    "no env/on_ready/defaults/packages/mutable/requires/naq",
    (m) => {
      for (const k of ["env", "on_ready", "defaults", "packages", "mutable_layer", "requires_host", "not_acted_upon"]) delete m[k];
    },
  ],
];

const REFUSED: [string, (m: Doc) => void, ErrorCode, string][] = [
  ["format", (m) => (m.format = "cairn.lock/2"), "MODEL_VALUE", "/format"],
  ["profile empty", (m) => (m.profile = ""), "MODEL_VALUE", "/profile"],
  ["profile_sha256 blake3", (m) => (m.profile_sha256 = "blake3:" + "4".repeat(64)), "DIGEST_INVALID", "/profile_sha256"],
  ["profile_sha256 number", (m) => (m.profile_sha256 = 4), "DIGEST_INVALID", "/profile_sha256"],
  ["resolved_at space", (m) => (m.resolved_at = "2026-03-01 12:00:00Z"), "MODEL_VALUE", "/resolved_at"],
  ["resolved_at month 13", (m) => (m.resolved_at = "2026-13-01T12:00:00Z"), "MODEL_VALUE", "/resolved_at"],
  ["resolved_at 10 frac", (m) => (m.resolved_at = "2026-03-01T12:00:00.1234567890Z"), "MODEL_VALUE", "/resolved_at"],
  ["resolved_at x prefix", (m) => (m.resolved_at = "x2026-03-01T12:00:00Z"), "MODEL_VALUE", "/resolved_at"],
  ["cairn_version empty", (m) => (m.cairn_version = ""), "MODEL_VALUE", "/cairn_version"],
  ["policy other", (m) => (m.verification_policy = "other"), "MODEL_VALUE", "/verification_policy"],
  ["arch amd64", (m) => (m.base.arch = "amd64"), "MODEL_VALUE", "/base/arch"],
  ["abi glibc", (m) => (m.base.abi = "glibc"), "MODEL_VALUE", "/base/abi"],
  ["base name", (m) => (m.base.name = "Debian"), "MODEL_VALUE", "/base/name"],
  ["source empty", (m) => (m.base.source = ""), "MODEL_VALUE", "/base/source"],
  ["source long", (m) => (m.base.source = "x".repeat(4097)), "LIMIT_EXCEEDED", "/base/source"],
  ["no capabilities", (m) => delete m.base.capabilities, "LOCK_INVALID", "/base/capabilities"],
  ["bad capability", (m) => (m.base.capabilities = ["os:debian@12", "???"]), "MODEL_VALUE", "/base/capabilities/1"],
  ["image bad", (m) => (m.base.image = "sha256:x"), "DIGEST_INVALID", "/base/image"],
  ["probed_at bad", (m) => (m.base.probed_at = "yesterday"), "MODEL_VALUE", "/base/probed_at"],
  ["os_id number", (m) => (m.base.os_id = 1), "MODEL_TYPE", "/base/os_id"],
  ["layer name empty", (m) => (m.layers[0].name = ""), "MODEL_VALUE", "/layers/0/name"],
  ["layer version empty", (m) => (m.layers[1].version = ""), "MODEL_VALUE", "/layers/1/version"],
  ["layer size -1", (m) => (m.layers[0].size = -1), "MODEL_VALUE", "/layers/0/size"],
  ["layer mount -1", (m) => (m.layers[0].mount_order = -1), "MODEL_VALUE", "/layers/0/mount_order"],
  ["layer from_formation empty", (m) => (m.layers[0].from_formation = ""), "MODEL_VALUE", "/layers/0/from_formation"],
  ["layer registry empty", (m) => (m.layers[0].registry = ""), "MODEL_VALUE", "/layers/0/registry"],
  ["layer satisfied_by bad", (m) => (m.layers[0].satisfied_by = { x: [1] }), "MODEL_TYPE", "/layers/0/satisfied_by/x/0"],
  ["layer satisfied_by not obj", (m) => (m.layers[0].satisfied_by = []), "MODEL_TYPE", "/layers/0/satisfied_by"],
  ["sig status other", (m) => (m.layers[0].signature = { ...SIG, status: "other" }), "MODEL_VALUE", "/layers/0/signature/status"],
  [
    "sig signed no keyid",
    (m) => {
      const { keyid: _k, ...s } = SIG;
      m.layers[0].signature = s;
    },
    "MODEL_MISSING_FIELD",
    "/layers/0/signature/keyid",
  ],
  ["sig unsigned with keyid", (m) => (m.layers[0].signature = { ...SIG, status: "unsigned-offline" }), "LOCK_INVALID", "/layers/0/signature/keyid"],
  [
    "sig no envelope",
    (m) => {
      const { envelope_sha256: _e, ...s } = SIG;
      m.layers[0].signature = s;
    },
    "MODEL_MISSING_FIELD",
    "/layers/0/signature/envelope_sha256",
  ],
  [
    "sig no status",
    (m) => {
      const { status: _s, ...s } = SIG;
      m.layers[0].signature = s;
    },
    "LOCK_INVALID",
    "/layers/0/signature/status",
  ],
  ["sig extra", (m) => (m.layers[0].signature = { ...SIG, x: 1 }), "MODEL_UNKNOWN_FIELD", "/layers/0/signature/x"],
  ["modulefile wrong", (m) => (m.layers[0].modulefile = { path: "/x.lua", sha256: "sha256:" + "5".repeat(64) }), "LOCK_INVALID", "/layers/0/modulefile/path"],
  ["modulefile no sha", (m) => (m.layers[0].modulefile = { path: modulefilePath("l1", "1") }), "MODEL_MISSING_FIELD", "/layers/0/modulefile/sha256"],
  [
    "modulefile extra",
    (m) => (m.layers[0].modulefile = { path: modulefilePath("l1", "1"), sha256: "sha256:" + "5".repeat(64), x: 1 }),
    "MODEL_UNKNOWN_FIELD",
    "/layers/0/modulefile/x",
  ],
  ["dup id", (m) => (m.layers[1].id = m.layers[0].id), "LOCK_INVALID", "/layers/1/id"],
  ["layers null", (m) => m.layers.push(null), "MODEL_NULL_ENTRY", "/layers/2"],
  ["formation no sig", (m) => delete m.formations[0].signature, "LOCK_INVALID", "/formations/0/signature"],
  ["formation extra", (m) => (m.formations[0].x = 1), "MODEL_UNKNOWN_FIELD", "/formations/0/x"],
  [
    "requires_host bad",
    (m) =>
      (m.requires_host = [
        { key: "gpu", value: "true" },
        { key: "???", value: "1" },
      ]),
    "MODEL_VALUE",
    "/requires_host/1/key",
  ],
  ["not_acted_upon extra", (m) => (m.not_acted_upon = { other: 1 }), "MODEL_UNKNOWN_FIELD", "/not_acted_upon/other"],
  ["env number", (m) => (m.env = { A: 1 }), "MODEL_TYPE", "/env/A"],
  ["on_ready number", (m) => (m.on_ready = [1]), "MODEL_TYPE", "/on_ready/0"],
  ["layer id unsafe", (m) => (m.layers[0].id = "../x"), "PATH_UNSAFE", "/layers/0/id"],
  ["layer sha blake3", (m) => (m.layers[0].sha256 = "blake3:" + "1".repeat(64)), "DIGEST_INVALID", "/layers/0/sha256"],
];

test("Validate: each planted defect is refused with its code at its path; the accepted edits are the controls", () => {
  for (const [name, edit] of ACCEPTED) assert.doesNotThrow(() => parse(edit), name);
  for (const [name, edit, code, path] of REFUSED) assert.equal(assertCode(() => parse(edit), code).path, path, name);
});

test("Validate: what is read back is what the document says", () => {
  const l = parse(() => {});
  assert.equal(l.profile, "p");
  assert.equal(l.profile_sha256, `sha256:${"4".repeat(64)}`);
  assert.equal(l.verification_policy, "signed");
  assert.deepEqual(
    { ...l.base, capabilities: l.base.capabilities.length },
    { ...FACTS, capabilities: 2, source: "rootfs:x", digest: doc().base.digest, probed_at: "2026-03-01T12:00:00Z" },
  );
  assert.deepEqual(
    l.layers.map((x) => [x.id, x.name, x.version, x.size, x.mount_order, x.from_formation, x.registry, x.signature?.status, [...x.satisfied_by]]),
    [
      ["l1-1-gnu-x86_64", "l1", "1", 10, 1, "f@1", "/r", "signed", [["glibc>=2", ["base"]]]],
      ["l2-1-gnu-x86_64", "l2", "1", 10, 2, "f@1", "/r", "signed", [["glibc>=2", ["base"]]]],
    ],
  );
  assert.deepEqual(l.formations, [{ name: "f", version: "1", signature: SIG }]);
  assert.deepEqual([...l.env], [["A", "1"]]);
  assert.deepEqual(l.on_ready, ["echo"]);
  assert.deepEqual(l.mutable_layer, { name: "w", version: "1", size_gb: 20, volume_type: "gp3" });
  assert.equal(l.requires_host.length, 1);
  assert.deepEqual(l.not_acted_upon, { instance: { cpus: 2 } });
  const unsigned = parse((m) => {
    const { keyid: _k, ...s } = SIG;
    m.layers[0].signature = { ...s, status: "unsigned-offline" };
    m.layers[0].modulefile = { path: modulefilePath("l1", "1"), sha256: `sha256:${"5".repeat(64)}` };
  });
  assert.deepEqual(unsigned.layers[0]!.signature, { status: "unsigned-offline", envelope_sha256: SIG.envelope_sha256 });
  assert.deepEqual(unsigned.layers[0]!.modulefile, { path: modulefilePath("l1", "1"), sha256: `sha256:${"5".repeat(64)}` });
  const bare = parse((m) => {
    for (const k of ["env", "on_ready", "defaults", "packages", "mutable_layer", "requires_host", "not_acted_upon", "formations", "profile_sha256"])
      delete m[k];
  });
  assert.deepEqual(
    [bare.env.size, bare.on_ready, bare.defaults.length, bare.packages, bare.mutable_layer, bare.requires_host, bare.formations],
    [0, [], 0, [], false, [], []],
  );
  assert.equal("not_acted_upon" in bare || "profile_sha256" in bare, false);
});

test("isFrozen: a base digest and every layer's sha256, size and mount order; any one missing is unfrozen", () => {
  assert.equal(isFrozen(parse(() => {})), true);
  assert.equal(isFrozen(parse((m) => delete m.base.digest)), false);
  for (const k of ["sha256", "size", "mount_order"]) {
    assert.equal(isFrozen(parse((m) => delete m.layers[1][k])), false, k);
  }
});

test("Parse without Validate: rules between fields come back as problems; a shape error is still refused", () => {
  const m = doc();
  m.layers[1].id = m.layers[0].id;
  m.layers[0].mount_order = 2;
  const { lock, problems } = parseLockfileUnvalidated(JSON.parse(JSON.stringify(m)) as JsonModel);
  assert.equal(lock.layers.length, 2);
  assert.deepEqual(
    problems.map((p) => [p.code, p.path]),
    [
      ["LOCK_INVALID", "/layers/1/id"],
      ["LOCK_INVALID", "/layers/1/mount_order"],
    ],
  );
  assert.deepEqual(parseLockfileUnvalidated(JSON.parse(JSON.stringify(doc())) as JsonModel).problems, []);
  assertCode(() => parseLockfileUnvalidated({ ...(JSON.parse(JSON.stringify(doc())) as object), format: 1 } as JsonModel), "MODEL_TYPE");
});

// A value of the wrong type, a missing field, a null entry: the issues are
// exactly these, at their own paths (another issue, or one at the parent,
// would mean a check that runs on a value already refused, or a path built
// wrong). A missing required string is reported as missing and as not a string.
const REFUSED_ONCE: [string, (m: Doc) => void, ErrorCode, string][] = [
  ["format number", (m) => (m.format = 1), "MODEL_TYPE", "/format"],
  ["policy number", (m) => (m.verification_policy = 1), "MODEL_TYPE", "/verification_policy"],
  ["arch number", (m) => (m.base.arch = 1), "MODEL_TYPE", "/base/arch"],
  ["abi number", (m) => (m.base.abi = 1), "MODEL_TYPE", "/base/abi"],
  ["version_id number", (m) => (m.base.version_id = 12), "MODEL_TYPE", "/base/version_id"],
  ["probed_at prefixed", (m) => (m.base.probed_at = "x2026-03-01T12:00:00Z"), "MODEL_VALUE", "/base/probed_at"],
  ["probed_at suffixed", (m) => (m.base.probed_at = "2026-03-01T12:00:00Zx"), "MODEL_VALUE", "/base/probed_at"],
  ["layer id number", (m) => (m.layers[0].id = 1), "MODEL_TYPE", "/layers/0/id"],
  ["sig status number", (m) => (m.layers[0].signature = { ...SIG, status: 1 }), "MODEL_TYPE", "/layers/0/signature/status"],
  ["envelope number", (m) => (m.layers[0].manifest_envelope = 1), "MODEL_TYPE", "/layers/0/manifest_envelope"],
  ["envelope not base64", (m) => (m.layers[0].manifest_envelope = "not base64!"), "MODEL_VALUE", "/layers/0/manifest_envelope"],
  ["modulefile path number", (m) => (m.layers[0].modulefile = { path: 1, sha256: `sha256:${"5".repeat(64)}` }), "MODEL_TYPE", "/layers/0/modulefile/path"],
  ["packages number", (m) => (m.packages = 1), "MODEL_TYPE", "/packages"],
  ["packages null entry", (m) => (m.packages = [null]), "MODEL_NULL_ENTRY", "/packages/0"],
  ["package set without its list", (m) => (m.packages = [{ manager: "pip" }]), "MODEL_MISSING_FIELD", "/packages/0/packages"],
  ["frozen number", (m) => (m.packages[0].frozen = 1), "MODEL_TYPE", "/packages/0/frozen"],
  ["formations number", (m) => (m.formations = 1), "MODEL_TYPE", "/formations"],
  ["formation name number", (m) => (m.formations[0].name = 1), "MODEL_TYPE", "/formations/0/name"],
  ["formation version number", (m) => (m.formations[0].version = 1), "MODEL_TYPE", "/formations/0/version"],
  ["formation signature number", (m) => (m.formations[0].signature = 1), "MODEL_TYPE", "/formations/0/signature"],
  ["defaults number", (m) => (m.defaults = 1), "MODEL_TYPE", "/defaults"],
  ["mutable_layer number", (m) => (m.mutable_layer = 1), "MODEL_TYPE", "/mutable_layer"],
];

test("Validate: a wrong type, a missing field or a null entry is one issue at its own path; control: the unedited document", () => {
  assert.doesNotThrow(() => parse(() => {}), "control");
  const issues = (edit: (m: Doc) => void, code: ErrorCode) => (assertCode(() => parse(edit), code).issues ?? []).map((i) => [i.path, i.code]);
  for (const [name, edit, code, path] of REFUSED_ONCE) assert.deepEqual(issues(edit, code), [[path, code]], name);
  const missing = (path: string) => [
    [path, "MODEL_MISSING_FIELD"],
    [path, "MODEL_TYPE"],
  ];
  assert.deepEqual(
    issues((m) => delete m.format, "LOCK_INVALID"),
    missing("/format"),
  );
  assert.deepEqual(
    issues((m) => (m.layers[0].modulefile = { sha256: `sha256:${"5".repeat(64)}` }), "LOCK_INVALID"),
    missing("/layers/0/modulefile/path"),
  );
});

test("Validate: abi none and unknown are accepted; a layer without satisfied_by has none; the base image is kept", () => {
  for (const abi of ["none", "unknown"]) {
    assert.equal(
      parse((m) => {
        m.base.abi = abi;
        delete m.base.digest;
      }).base.abi,
      abi,
    );
  }
  assert.equal(parse((m) => delete m.layers[0].satisfied_by).layers[0]!.satisfied_by.size, 0);
  const image = `sha256:${"6".repeat(64)}`;
  assert.equal(
    parse((m) => {
      m.base.image = image;
      delete m.base.digest;
    }).base.image,
    image,
  );
});

test("Validate: an optional field that is absent is absent from what is read back, not present as undefined", () => {
  const bare = parse((m) => {
    for (const k of ["os_id", "version_id", "digest", "probed_at"]) delete m.base[k];
    m.layers = [{ id: "l1-1-gnu-x86_64", name: "l1", version: "1" }];
  });
  assert.deepEqual(Object.keys(bare.base).sort(), ["abi", "arch", "capabilities", "name", "source"]);
  assert.deepEqual(Object.keys(bare.layers[0]!).sort(), ["id", "name", "satisfied_by", "version"]);
  const full = parse(() => {});
  assert.deepEqual(Object.keys(full.base).sort(), ["abi", "arch", "capabilities", "digest", "name", "os_id", "probed_at", "source", "version_id"], "control");
  assert.deepEqual(
    Object.keys(full.layers[0]!).sort(),
    ["from_formation", "id", "manifest_sha256", "mount_order", "name", "registry", "satisfied_by", "sha256", "signature", "size", "version"],
    "control",
  );
});
