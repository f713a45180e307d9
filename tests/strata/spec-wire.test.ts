/**
 * Strata's wire format (seed 002): the field table against the seed's struct
 * tags, written here by hand from the seed; round trips; Validate; and the
 * EnvironmentID recomputed with an encoder written in this test.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { CairnError, Checker, parseYamlText, toYamlText } from "../../src/core/index.ts";
import {
  environmentId,
  environmentIdInput,
  isFrozen,
  lockFileProblems,
  lockFileToYaml,
  parseLockFileText,
  validateLockFile,
} from "../../src/strata/spec/lock-file.ts";
import { type Kind, SCHEMAS, type StructSchema } from "../../src/strata/spec/schema.ts";
import { readStruct, writeStruct, zeroStruct } from "../../src/strata/spec/struct-wire.ts";
import { SEED_TAGS } from "./seed-tags.ts";

test("the field table is the seed's struct tags: every name, in order, with omitempty as the seed gives it", () => {
  assert.deepEqual(SCHEMAS.map((s) => s.type).sort(), Object.keys(SEED_TAGS).sort());
  for (const s of SCHEMAS) {
    assert.equal(s.fields.map((f) => `${f.name}${f.omitempty ? "?" : ""}`).join(" "), SEED_TAGS[s.type], s.type);
  }
});

const H = (c: string) => c.repeat(64);

/** A lockfile written by hand in the seed's format: frozen, env, on_ready, defaults, a formation member, a pip set, a host requirement. */
export const HAND_LOCK = `profile: seq-analysis
profile_sha256: ${H("e")}
resolved_at: 2026-11-30T05:17:52Z
strata_version: v0.29.0
verification_policy: unsigned-offline
base:
  declared_os: debian12
  ami_id: ""
  ami_sha256: ${H("b")}
  capabilities:
    ami_id: ""
    os: debian12
    arch: x86_64
    abi: gnu
    probed_at: 2026-11-30T05:17:50Z
    system_compiler: ""
    provides:
      - {name: glibc, version: "2.36"}
layers:
  - id: python-3.12.4-gnu-x86_64
    name: python
    version: "3.12.4"
    source: blobs/sha256/${H("a")}
    sha256: ${H("a")}
    size: 1234
    content_manifest:
      /opt/python/3.12.4/bin/python3: ${H("b")}
    rekor_entry: ""
    bundle: ""
    signed_by: ""
    cosign_version: ""
    provides: [{name: python, version: "3.12.4"}]
    requires: [{name: glibc, min_version: "2.31"}]
    arch: x86_64
    abi: gnu
    built_at: 0001-01-01T00:00:00Z
    user_selectable: true
    install_layout: versioned
    recipe_sha256: ""
    build_env_lock_id: ""
    mount_order: 1
    satisfied_by: python@3.12
  - id: samtools-1.19-gnu-x86_64
    name: samtools
    version: "1.19"
    source: ""
    sha256: ${H("c")}
    size: 99
    content_manifest: {}
    rekor_entry: ""
    bundle: ""
    signed_by: ""
    cosign_version: ""
    provides: []
    requires: []
    arch: x86_64
    abi: gnu
    built_at: 2026-01-02T03:04:05Z
    user_selectable: true
    recipe_sha256: ""
    build_env_lock_id: ""
    mount_order: 2
    satisfied_by: formation:bio-seq@2026.03
    from_formation: bio-seq@2026.03
env:
  LC_ALL: C.UTF-8
  GREETING: "<a&b> \\u2028 \\b"
on_ready:
  - python3 -c 'import numpy'
defaults:
  - python@3.12
  - {name: samtools, version: "1.19"}
packages:
  - manager: pip
    packages:
      - {name: numpy, version: 1.26.4, sha256: ${H("d")}}
      - {name: six, version: 1.16.0}
requires_host:
  - {key: efa, value: "true"}
`;

/** The same encoding as Go's json.Marshal, by another route: JSON.stringify, then the escapes Go adds. */
function goLike(v: unknown): string {
  return JSON.stringify(v)
    .replace(/</g, "\\u003c")
    .replace(/>/g, "\\u003e")
    .replace(/&/g, "\\u0026")
    .replace(/\u2028/g, "\\u2028")
    .replace(/\u2029/g, "\\u2029");
}

test("a hand-written seed lockfile reads, validates, is frozen, and writes back byte-stable", () => {
  const l = parseLockFileText(HAND_LOCK);
  validateLockFile(l);
  assert.equal(isFrozen(l), true);
  assert.equal(l.layers[1]!.from_formation, "bio-seq@2026.03");
  assert.equal(l.layers[0]!.built_at, "", "Go's zero time reads as unset");
  assert.deepEqual(l.requires_host, [{ key: "efa", value: "true" }]);
  const once = lockFileToYaml(l);
  const again = parseLockFileText(once);
  assert.deepEqual(again, l);
  assert.equal(lockFileToYaml(again), once);
  assert.match(once, /built_at: 0001-01-01T00:00:00Z/, "a non-omitempty time is written, as Go writes it");
  assert.doesNotMatch(once, /from_formation: ""/, "omitempty fields at zero are left out");
});

test("Strata's EnvironmentID, recomputed here: Go's JSON of envHashInput, layers in mount order", () => {
  const l = parseLockFileText(HAND_LOCK);
  const input = {
    base_ami_sha256: H("b"),
    layer_sha256s: [H("a"), H("c")],
    env: { GREETING: "<a&b> \u2028 \b", LC_ALL: "C.UTF-8" },
    on_ready: ["python3 -c 'import numpy'"],
    packages: [
      {
        manager: "pip",
        packages: [
          { name: "numpy", version: "1.26.4", sha256: H("d") },
          { name: "six", version: "1.16.0" },
        ],
      },
    ],
  };
  assert.equal(environmentIdInput(l), goLike(input));
  assert.equal(environmentId(l), createHash("sha256").update(goLike(input)).digest("hex"));
  assert.match(environmentId(l), /^[0-9a-f]{64}$/);
  // Mount order, not file order, decides the sequence.
  const swapped = parseLockFileText(HAND_LOCK.replace("mount_order: 1", "mount_order: 9"));
  assert.deepEqual(JSON.parse(environmentIdInput(swapped)).layer_sha256s, [H("c"), H("a")]);
  // Not frozen: no identity.
  const unfrozen = parseLockFileText(HAND_LOCK.replace(`sha256: ${H("c")}\n`, 'sha256: ""\n'));
  assert.equal(isFrozen(unfrozen), false);
  assert.equal(environmentId(unfrozen), "");
});

test("a package set with no list hashes as null, an empty list as []: Go tells them apart", () => {
  const base = HAND_LOCK.replace(/packages:\n {2}- manager: pip\n {4}packages:\n( {6}- .*\n)+/, "PKGS");
  const nil = parseLockFileText(base.replace("PKGS", "packages:\n  - manager: cran\n"));
  const empty = parseLockFileText(base.replace("PKGS", "packages:\n  - manager: cran\n    packages: []\n"));
  assert.match(environmentIdInput(nil), /"packages":\[\{"manager":"cran","packages":null\}\]/);
  assert.match(environmentIdInput(empty), /"packages":\[\{"manager":"cran","packages":\[\]\}\]/);
  assert.notEqual(environmentId(nil), environmentId(empty));
});

test("Validate: a malformed present digest, an unsafe id, a shared mount order — each named; the good lockfile passes", () => {
  assert.deepEqual(lockFileProblems(parseLockFileText(HAND_LOCK)), []);
  const bad = (from: string, to: string) => lockFileProblems(parseLockFileText(HAND_LOCK.replace(from, to)));
  assert.deepEqual(
    bad(`sha256: ${H("a")}\n`, `sha256: ${H("A")}\n`).map((i) => i.path),
    ["/layers/0/sha256"],
  );
  assert.deepEqual(
    bad(`sha256: ${H("a")}\n`, `sha256: sha256:${H("a")}\n`).map((i) => i.path),
    ["/layers/0/sha256"],
  );
  assert.deepEqual(
    bad(`ami_sha256: ${H("b")}`, "ami_sha256: sha256-ami-test123456789").map((i) => i.path),
    ["/base/ami_sha256"],
  );
  assert.deepEqual(
    bad("id: python-3.12.4-gnu-x86_64", "id: ../../etc/cron.d/x").map((i) => [i.path, i.code]),
    [["/layers/0/id", "PATH_UNSAFE"]],
  );
  assert.deepEqual(
    bad("mount_order: 2", "mount_order: 1").map((i) => i.path),
    ["/layers/1/mount_order"],
  );
  assert.throws(
    () => validateLockFile(parseLockFileText(HAND_LOCK.replace("mount_order: 2", "mount_order: 1"))),
    (e: unknown) => e instanceof CairnError && e.code === "LOCK_INVALID",
  );
});

test("parsing is strict about what is not a lockfile, lenient about what an older Strata left out", () => {
  const refuse = (text: string, path: string, code: string) =>
    assert.throws(
      () => parseLockFileText(text),
      (e: unknown) => e instanceof CairnError && e.code === code && (e.issues ?? [{ path: e.path }]).some((i) => i.path === path),
    );
  refuse(HAND_LOCK.replace("strata_version: v0.29.0", "strata_version: v0.29.0\ncairn_version: x"), "/cairn_version", "MODEL_UNKNOWN_FIELD");
  refuse(HAND_LOCK.replace("    mount_order: 2", "    mount_order: two"), "/layers/1/mount_order", "MODEL_TYPE");
  refuse(HAND_LOCK.replace("on_ready:\n", "on_ready:\n  -\n"), "/on_ready/0", "MODEL_NULL_ENTRY");
  refuse(HAND_LOCK.replace("resolved_at: 2026-11-30T05:17:52Z", "resolved_at: yesterday"), "/resolved_at", "MODEL_VALUE");
  // An older Strata: no verification_policy, no base capabilities, layers without the v0.29 fields.
  const old = parseLockFileText(
    `profile: p\nprofile_sha256: ""\nresolved_at: 2025-01-01T00:00:00Z\nstrata_version: v0.21.0\nbase: {declared_os: al2023, ami_id: ami-1, ami_sha256: ${H("e")}}\nlayers:\n  - {id: x-1-a-b, name: x, version: "1", sha256: ${H("f")}, mount_order: 1, satisfied_by: x}\n`,
  );
  assert.equal(old.verification_policy, "");
  assert.equal(old.base.capabilities.os, "");
  assert.equal(old.layers[0]!.content_manifest && Object.keys(old.layers[0]!.content_manifest).length, 0);
  assert.equal(isFrozen(old), true);
  assert.deepEqual(lockFileProblems(old), []);
});

test("every type round-trips: a value with every field set is written, read back equal, and written again byte for byte", () => {
  const sample = (kind: Kind, name: string): unknown => {
    if (kind === "string") return `${name} <&> \u2028 "x"`;
    if (kind === "time") return "2026-01-02T03:04:05.123456789Z";
    if (kind === "int") return 42;
    if (kind === "bool") return true;
    if (kind === "map") return Object.assign(Object.create(null), { "/b/ä": "1", "/a": "2" });
    if (kind === "ref") return { kind: "formation", name: "bio-seq", version: "2026.03" };
    if ("list" in kind) return [sample(kind.list, name), sample(kind.list, name)];
    return full("struct" in kind ? kind.struct : kind.ptr);
  };
  const full = (schema: StructSchema): Record<string, unknown> => {
    const o = zeroStruct(schema);
    for (const f of schema.fields) o[f.name] = sample(f.kind, f.name);
    return o;
  };
  for (const schema of SCHEMAS) {
    const value = full(schema);
    const text = toYamlText(writeStruct(value, schema));
    const c = new Checker("LOCK_INVALID");
    const back = readStruct(c, parseYamlText(text), "", schema);
    assert.equal(c.count, 0, `${schema.type}: ${JSON.stringify(c.issues)}`);
    assert.deepEqual(JSON.parse(JSON.stringify(back)), JSON.parse(JSON.stringify(value)), schema.type);
    assert.equal(toYamlText(writeStruct(back, schema)), text, `${schema.type}: byte-stable`);
    // and the zero value: written with every omitempty field left out, read back as the zero value
    const zero = zeroStruct(schema);
    const zc = new Checker("LOCK_INVALID");
    const zeroText = toYamlText(writeStruct(zero, schema));
    assert.deepEqual(JSON.parse(JSON.stringify(readStruct(zc, parseYamlText(zeroText), "", schema))), JSON.parse(JSON.stringify(zero)), `${schema.type} zero`);
    for (const f of schema.fields.filter((x) => x.omitempty))
      assert.ok(!new RegExp(`^${f.name}:`, "m").test(zeroText), `${schema.type}.${f.name} is omitempty`);
  }
});
