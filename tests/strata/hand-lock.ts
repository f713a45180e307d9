/**
 * A lockfile written by hand in Strata's format (seed 002), from the example
 * registry's signed manifests, by the mapping docs/strata.md gives (bare hex
 * digests, provides and requires as objects, symlinks by the sha256 of their
 * target, install_layout flat or versioned). Test code, not cairn's writer:
 * it is what a Strata user would bring.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import type { ExampleRegistry } from "../../examples/strata/build-registry.ts";
import { LocalRegistry, modulefilePath } from "../../src/strata/index.ts";

/** A ResolvedLayer written by hand from the registry's signed manifest, by the mapping docs/strata.md gives. */
export function handLayer(ex: ExampleRegistry, id: string, order: number, satisfiedBy: string, fromFormation?: string): string {
  const m = LocalRegistry.open(ex.registry).readLayer(id).value;
  const hex = (d: string) => d.replace(/^sha256:/, "");
  const content = [...m.content_manifest].map(([p, d]) => `      ${JSON.stringify(p)}: ${hex(d)}`);
  for (const [p, t] of m.symlinks) content.push(`      ${JSON.stringify(p)}: ${createHash("sha256").update(t).digest("hex")}`);
  assert.equal(m.modulefile, undefined, "the example layers carry no modulefile");
  assert.notEqual(modulefilePath(m.name, m.version), "");
  return `  - id: ${m.id}
    name: ${m.name}
    version: "${m.version}"
    source: ""
    sha256: ${hex(m.sha256)}
    size: ${m.size}
    content_manifest:
${content.length ? content.join("\n") : "      {}"}
    rekor_entry: ""
    bundle: ""
    signed_by: ""
    cosign_version: ""
    provides: [${m.provides.map((c) => `{name: ${c.name}, version: "${c.version}"}`).join(", ")}]
    requires: [${m.requires.map((q) => `{name: ${q.name}${q.min ? `, min_version: "${q.min}"` : ""}${q.max ? `, max_version: "${q.max}"` : ""}}`).join(", ")}]
    arch: ${m.arch}
    abi: ${m.abi}
    built_at: 0001-01-01T00:00:00Z
    user_selectable: ${m.user_selectable}
    install_layout: ${m.install_layout === "rootfs" ? "flat" : "versioned"}
    recipe_sha256: ""
    build_env_lock_id: ""
    mount_order: ${order}
    satisfied_by: "${satisfiedBy}"
${fromFormation ? `    from_formation: ${fromFormation}\n` : ""}`.replace("content_manifest:\n      {}", "content_manifest: {}");
}

/** The hand-written lockfile: python, the bio-seq formation's members, env, on_ready, defaults, a pip set and a host requirement. */
export function handLock(
  ex: ExampleRegistry,
  base: Record<string, unknown>,
  opts: { extraLayers?: string[]; pip?: { name: string; version: string; sha256: string } } = {},
): string {
  const pip = opts.pip ?? { name: "six", version: "1.16.0", sha256: "d".repeat(64) };
  return `profile: seq-analysis
profile_sha256: ""
resolved_at: 2026-11-30T05:17:52Z
strata_version: v0.29.0
base:
  declared_os: debian12
  ami_id: ""
  ami_sha256: ${(base as { ami_sha256: string }).ami_sha256}
  capabilities:
    ami_id: ""
    os: debian12
    arch: x86_64
    abi: gnu
    probed_at: 2026-11-30T05:17:50Z
    system_compiler: ""
    provides: [${(((base.capabilities as Record<string, unknown>).provides ?? []) as Record<string, unknown>[]).map((c) => `{name: "${c.name}", version: "${c.version}"}`).join(", ")}]
layers:
${handLayer(ex, "samtools-1.20-gnu-x86_64", 1, "formation:bio-seq@2026.03", "bio-seq@2026.03")}${handLayer(ex, "bwa-0.7.18-gnu-x86_64", 2, "formation:bio-seq@2026.03", "bio-seq@2026.03")}${handLayer(ex, "python-3.12.4-gnu-x86_64", 3, "python@3.12")}${(opts.extraLayers ?? []).map((id, i) => handLayer(ex, id, 4 + i, id.split("-")[0]!)).join("")}env:
  LC_ALL: C.UTF-8
on_ready:
  - python3 --version
defaults:
  - {name: python, version: "3.12"}
packages:
  - manager: pip
    packages:
      - {name: ${pip.name}, version: ${pip.version}, sha256: ${pip.sha256}}
requires_host:
  - {key: efa, value: "true"}
`;
}
