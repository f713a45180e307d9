/**
 * Lockfiles written by hand in Strata's format (seed 002's LockFile: bare hex
 * digests, provides and requires as objects, fields left out hold Go's zero
 * value), for the change model and the lock pages. Test code, not cairn's
 * writer: what a Strata user would bring.
 */
export interface HandLayer {
  readonly name: string;
  readonly version: string;
  /** One hex digit repeated (a letter, so YAML reads a string). */
  readonly digest: string;
  readonly size: number;
  readonly order: number;
  readonly satisfiedBy: string;
  readonly formation?: string;
  readonly provides?: readonly string[];
  readonly requires?: readonly string[];
}

export interface HandPackage {
  readonly name: string;
  readonly version: string;
  readonly digest?: string;
}

export interface HandLock {
  readonly layers: readonly HandLayer[];
  readonly sets?: readonly { readonly manager: string; readonly env?: string; readonly packages: readonly HandPackage[] }[];
  readonly env?: Readonly<Record<string, string>>;
  readonly defaults?: readonly string[];
}

const hex = (d: string): string => d.repeat(64).slice(0, 64);

function layerYaml(l: HandLayer): string {
  const cap = (s: string) => {
    const [name, version] = s.split("@");
    return `{name: ${name}, version: "${version}"}`;
  };
  const req = (s: string) => {
    const [name, min] = s.split(">=");
    return min === undefined ? `{name: ${name}}` : `{name: ${name}, min_version: "${min}"}`;
  };
  return `  - id: ${l.name}-${l.version}-gnu-x86_64
    name: ${l.name}
    version: "${l.version}"
    sha256: ${hex(l.digest)}
    size: ${l.size}
    provides: [${(l.provides ?? [`${l.name}@${l.version}`]).map(cap).join(", ")}]
    requires: [${(l.requires ?? []).map(req).join(", ")}]
    arch: x86_64
    abi: gnu
    mount_order: ${l.order}
    satisfied_by: "${l.satisfiedBy}"
${l.formation ? `    from_formation: "${l.formation}"\n` : ""}`;
}

/** A lockfile's text from the hand description. */
export function handLockText(h: HandLock): string {
  const sets = (h.sets ?? []).map(
    (s) =>
      `  - manager: ${s.manager}\n${s.env ? `    env: ${s.env}\n` : ""}    packages:\n${s.packages
        .map((p) => `      - {name: ${p.name}, version: "${p.version}"${p.digest ? `, sha256: ${hex(p.digest)}` : ""}}`)
        .join("\n")}\n`,
  );
  const env = Object.entries(h.env ?? {});
  return `profile: demo
resolved_at: 2026-11-30T05:17:52Z
strata_version: v0.29.0
base:
  declared_os: debian12
  ami_sha256: ${hex("a")}
  capabilities: {os: debian12, arch: x86_64, abi: gnu, provides: [{name: glibc, version: "2.36"}]}
layers:
${h.layers.map(layerYaml).join("")}${env.length ? `env:\n${env.map(([k, v]) => `  ${k}: "${v}"\n`).join("")}` : ""}${
  h.defaults?.length ? `defaults:\n${h.defaults.map((d) => `  - ${d}\n`).join("")}` : ""
}${sets.length ? `packages:\n${sets.join("")}` : ""}`;
}

/** The "before" lockfile most tests start from: python, the bio-seq formation's two members, a pip set. */
export const BEFORE: HandLock = {
  layers: [
    {
      name: "samtools",
      version: "1.20",
      digest: "b",
      size: 2048,
      order: 1,
      satisfiedBy: "formation:bio-seq@2026.03",
      formation: "bio-seq@2026.03",
      requires: ["glibc>=2.28"],
    },
    {
      name: "bwa",
      version: "0.7.18",
      digest: "c",
      size: 1024,
      order: 2,
      satisfiedBy: "formation:bio-seq@2026.03",
      formation: "bio-seq@2026.03",
      requires: ["samtools>=1.0"],
    },
    { name: "python", version: "3.11.9", digest: "d", size: 4096, order: 3, satisfiedBy: "python@3.11", requires: ["glibc>=2.31"] },
    { name: "tool-a", version: "1.0", digest: "e", size: 100, order: 4, satisfiedBy: "tool-a" },
  ],
  sets: [
    {
      manager: "pip",
      packages: [
        { name: "numpy", version: "1.26.0", digest: "1a" },
        { name: "six", version: "1.16.0", digest: "2b" },
        { name: "pytz", version: "2024.1", digest: "3c" },
      ],
    },
  ],
  env: { LC_ALL: "C.UTF-8" },
  defaults: ['{name: python, version: "3.11"}'],
};
