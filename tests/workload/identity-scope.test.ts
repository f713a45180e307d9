import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import type { JsonModel, Sha256Digest } from "../../src/core/index.ts";
import { DERIVED_ENTRY_SCOPE, encodeDerived } from "../../src/workload/derived-entry.ts";
import { SOURCE_IDENTITY_SCOPE, WORKLOAD_IDENTITY_SCOPE } from "../../src/workload/workload-identity.ts";
import { LAUNCH_IDENTITY_SCOPE, launchModel, makeLaunch } from "../../src/workload/launch.ts";
import { encodeWorkloadLock, LOCK_FIELDS } from "../../src/workload/workload-lock.ts";
import { parsePolicy, POLICY_KEYS, STRICT_POLICY } from "../../src/tree/index.ts";
import { canonicalSpecModel, checkWorkloadSpec, SPEC_FIELDS } from "../../src/workload/spec.ts";
import { assertCatchesExtraField, assertScopeExhaustive, named } from "../helpers/identity-scope.ts";
import { GCC_SKIP } from "./fixtures/static-program.ts";
import { assemble, binarySpec, binaryWorkspace } from "./fixtures/workspace.ts";

/** Every relaxation taken, so the policy model names every key. */
const ALL_RELAXED = { hardlinks: "copy", setid: "strip", devices: "skip", xattrs: "drop", platform: "config" };

const SCOPE_FIELDS = [...Object.keys(WORKLOAD_IDENTITY_SCOPE.covers), ...Object.keys(WORKLOAD_IDENTITY_SCOPE.excludes)];

test("every spec field and every lock field is placed as covered or not covered (and nothing else is listed)", () => {
  const fields = new Set<string>();
  for (const k of SPEC_FIELDS.top) if (k !== "source") fields.add(`spec:/${k}`);
  for (const k of SPEC_FIELDS.binary) fields.add(`spec:/source/binary/${k}`);
  for (const k of SPEC_FIELDS.oci) fields.add(`spec:/source/oci/${k}`);
  for (const k of LOCK_FIELDS) fields.add(`lock:/${k}`);
  for (const k of POLICY_KEYS) fields.add(`spec:/policy/${k}`);
  for (const k of ["version", ...POLICY_KEYS]) fields.add(`lock:/policy/${k}`);
  const missing = [...fields].filter((f) => !SCOPE_FIELDS.includes(f));
  assert.deepEqual(missing, [], "add these fields to WORKLOAD_IDENTITY_SCOPE in src/workload/workload-identity.ts");
  const stale = SCOPE_FIELDS.filter((f) => !fields.has(f));
  assert.deepEqual(stale, [], "WORKLOAD_IDENTITY_SCOPE lists fields the models no longer have");
});

/** Real instances: a full binary spec and full OCI specs (a layout and a registry ref; all accepted by the spec parser) and a lock written by encodeWorkloadLock. */
function instances(): unknown[] {
  const d = (c: string) => `sha256:${c.repeat(64)}` as Sha256Digest;
  const withAll = (m: Record<string, unknown>): Record<string, unknown> => {
    const canonical = canonicalSpecModel(checkWorkloadSpec(m as JsonModel));
    const full = { ...m, policy: canonical.policy, limits: canonical.limits, run: { steps: [] } };
    checkWorkloadSpec(full as JsonModel);
    return full;
  };
  const binary = withAll(JSON.parse(binarySpec()) as Record<string, unknown>);
  const oci = withAll({
    schema: "cairn.workload/1",
    source: { oci: { layout: "./image", manifest: d("1"), launch: { args: ["x"], env: { A: "1" }, workdir: "/", user: "1:1" } } },
    policy: ALL_RELAXED,
  });
  const ociRef = withAll({ schema: "cairn.workload/1", source: { oci: { ref: `127.0.0.1:5000/app@${d("8")}`, manifest: d("1") } } });
  const identities = { workload: d("2"), source: d("3"), fs: d("4"), launch: d("5") };
  const lock = JSON.parse(
    encodeWorkloadLock({
      kind: "oci",
      identities,
      policy: parsePolicy(ALL_RELAXED),
      raw: [{ role: "spec", digest: d("6"), size: 1 }],
      derived: { digest: d("7"), size: 2 },
      created: "2026-01-01T00:00:00.000Z",
      cairnVersion: "t",
    }),
  ) as unknown;
  return [named("spec", binary), named("spec", oci), named("spec", ociRef), named("lock", lock)];
}

test("the workload identity scope places every field of real spec and lock models (shared exhaustiveness helper)", () => {
  assertScopeExhaustive(WORKLOAD_IDENTITY_SCOPE, ...instances());
});

test("control: a spec with one more field fails the helper", () => {
  assertCatchesExtraField(WORKLOAD_IDENTITY_SCOPE, ...instances());
});

test("the derived entry scope places every field of a real encoded entry", () => {
  const d = (c: string) => `sha256:${c.repeat(64)}` as Sha256Digest;
  const launch = makeLaunch({ argv: ["/bin/app"], env: [], workdir: "/", user: "1000:1000" }, "");
  const tree = new Map([["/", { path: "/", type: "dir" as const, mode: 0o755, uid: 0, gid: 0, mtime: 0 }]]);
  const entry = JSON.parse(
    encodeDerived({
      kind: "binary",
      identities: { workload: d("1"), source: d("2"), fs: d("3"), launch: d("4") },
      policy: STRICT_POLICY,
      launch,
      raw: [{ role: "spec", digest: d("5"), size: 1 }],
      tree,
    }).toString("utf8"),
  ) as unknown;
  assertScopeExhaustive(DERIVED_ENTRY_SCOPE, entry);
  assertCatchesExtraField(DERIVED_ENTRY_SCOPE, entry);
});

test("the source and launch identity scopes place every field of their models", () => {
  const d = (c: string) => `sha256:${c.repeat(64)}` as Sha256Digest;
  const sources = [
    { kind: "binary", executable: d("1"), size: 3 },
    { kind: "oci", manifest: d("2") },
  ];
  assertScopeExhaustive(SOURCE_IDENTITY_SCOPE, ...sources);
  assertCatchesExtraField(SOURCE_IDENTITY_SCOPE, ...sources);
  const launch = launchModel(makeLaunch({ argv: ["/bin/app"], env: ["A=1"], workdir: "/", user: "1000:1000" }, ""));
  assertScopeExhaustive(LAUNCH_IDENTITY_SCOPE, launch);
  assertCatchesExtraField(LAUNCH_IDENTITY_SCOPE, launch);
});

test("the lock written by assemble has exactly LOCK_FIELDS", { skip: GCC_SKIP }, async () => {
  const ws = binaryWorkspace();
  await assemble(ws);
  assert.deepEqual(Object.keys(JSON.parse(readFileSync(ws.lockPath, "utf8")) as object).sort(), [...LOCK_FIELDS].sort());
});

test("not-covered fields leave the workload identity unchanged; covered ones change it", { skip: GCC_SKIP }, async () => {
  const base = await assemble(binaryWorkspace());
  const withRunAndLimits = JSON.parse(binarySpec()) as Record<string, unknown>;
  withRunAndLimits.run = { steps: [] };
  withRunAndLimits.limits = { fileSize: 10 * 1024 * 1024 };
  const nc = binaryWorkspace(JSON.stringify(withRunAndLimits));
  const moved = binaryWorkspace(binarySpec({ path: "./moved" }));
  writeFileSync(join(moved.dir, "moved"), readFileSync(join(moved.dir, "hello")));
  for (const ws of [nc, moved]) assert.equal((await assemble(ws)).identities.workload, base.identities.workload);
  for (const over of [{ args: ["x"] }, { env: { A: "1" } }, { workdir: "/srv" }, { user: "2000:2000" }]) {
    assert.notEqual((await assemble(binaryWorkspace(binarySpec(over)))).identities.workload, base.identities.workload, JSON.stringify(over));
  }
});

test("identities do not depend on umask, time zone or locale (assembled in child processes)", { skip: GCC_SKIP, timeout: 60_000 }, async () => {
  const child = fileURLToPath(new URL("./fixtures/assemble-child.ts", import.meta.url));
  const outputs = new Set<string>();
  for (const [umask, tz, lang] of [
    ["022", "UTC", "C"],
    ["077", "Pacific/Kiritimati", "tr_TR.UTF-8"],
    ["002", "America/St_Johns", "de_DE.UTF-8"],
  ]) {
    const ws = binaryWorkspace();
    const out = execFileSync("sh", ["-c", `umask ${umask}; exec "$0" --import tsx "$@"`, process.execPath, child, ws.specPath, ws.storeDir, ws.lockPath], {
      env: { ...process.env, TZ: tz, LANG: lang, LC_ALL: lang },
    });
    outputs.add(out.toString().trim());
  }
  assert.equal(outputs.size, 1, [...outputs].join("\n"));
});
