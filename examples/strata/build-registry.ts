/**
 * Builds the bundled example: a small signed layer registry made from
 * generated files, a fake Debian 12 root filesystem to probe as the base, and
 * the keys to sign and verify with. Nothing is downloaded and nothing from the
 * generated files is ever executed.
 *
 *   node --import tsx examples/strata/build-registry.ts OUT
 *
 * writes OUT/registry (layers, one formation, one conflicting pair),
 * OUT/rootfs, OUT/registry.{key,pub} (layer signing) and OUT/lock.{key,pub}
 * (lockfile signing). Then resolve examples/strata/profile.yaml against it
 * (see docs/strata.md).
 */
import { chmodSync, existsSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { generateSigningKey, writeKeyPair, type SigningKey } from "../../src/core/index.ts";
import {
  LocalRegistry, buildLayerFromDirectory, formationOf, parseCapability, parseRequirement, type LayerSpec,
} from "../../src/strata/index.ts";

interface ToyLayer {
  readonly name: string;
  readonly version: string;
  readonly provides?: string[];
  readonly requires?: string[];
  readonly abi?: LayerSpec["abi"];
  readonly arch?: LayerSpec["arch"];
  readonly internal?: boolean;
  /** relative path → content; a trailing "*" in the path marks it executable. */
  readonly files: Record<string, string>;
}

export const TOY_LAYERS: readonly ToyLayer[] = [
  { name: "python", version: "3.11.9", provides: ["python@3.11.9"], requires: ["glibc>=2.31"], abi: "gnu", arch: "x86_64", files: { "opt/python/3.11/bin/python3*": "#!/bin/sh\necho 'toy python 3.11.9'\n" } },
  { name: "python", version: "3.12.4", provides: ["python@3.12.4"], requires: ["glibc>=2.31"], abi: "gnu", arch: "x86_64", files: { "opt/python/3.12/bin/python3*": "#!/bin/sh\necho 'toy python 3.12.4'\n" } },
  { name: "numpy", version: "2.0.1", provides: ["numpy@2.0.1"], requires: ["python>=3.10,<3.13"], files: { "opt/python/site-packages/numpy/__init__.py": "__version__ = '2.0.1'\n" } },
  { name: "samtools", version: "1.20", provides: ["samtools@1.20"], requires: ["glibc>=2.28"], abi: "gnu", arch: "x86_64", internal: true, files: { "usr/local/bin/samtools*": "#!/bin/sh\necho 'toy samtools 1.20'\n", "usr/local/share/bio/README": "samtools\n" } },
  { name: "bwa", version: "0.7.18", provides: ["bwa@0.7.18"], requires: ["samtools>=1.0"], abi: "gnu", arch: "x86_64", internal: true, files: { "usr/local/bin/bwa*": "#!/bin/sh\necho 'toy bwa 0.7.18'\n", "usr/local/share/bio/README": "bwa\n" } },
  { name: "tool-a", version: "1.0", provides: ["tool-a@1.0"], files: { "usr/local/bin/tool*": "#!/bin/sh\necho a\n" } },
  { name: "tool-b", version: "1.0", provides: ["tool-b@1.0"], files: { "usr/local/bin/tool*": "#!/bin/sh\necho b\n" } },
];

/** The formation: samtools then bwa (both write usr/local/share/bio/README; inside one formation that is allowed). */
export const TOY_FORMATION = { name: "bio-seq", version: "2026.03", members: ["samtools-1.20-gnu-x86_64", "bwa-0.7.18-gnu-x86_64"] } as const;

function writeTree(root: string, files: Record<string, string>): void {
  for (const [rawPath, content] of Object.entries(files)) {
    const exec = rawPath.endsWith("*");
    const p = join(root, exec ? rawPath.slice(0, -1) : rawPath);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, content);
    chmodSync(p, exec ? 0o755 : 0o644);
  }
}

export function toySpec(l: ToyLayer): LayerSpec {
  return {
    name: l.name, version: l.version, arch: l.arch ?? "noarch", abi: l.abi ?? "none", install_layout: "rootfs",
    user_selectable: l.internal !== true, builder: "cairn example",
    provides: (l.provides ?? []).map((p) => parseCapability(p)), requires: (l.requires ?? []).map((r) => parseRequirement(r)),
  };
}

/** A minimal ELF header for x86_64 (e_machine 0x3e): enough for the probe to read the arch; not a program. */
function elfHeader(machine: number): Buffer {
  const h = Buffer.alloc(64);
  h.write("\x7fELF", 0, "latin1");
  h[4] = 2; // 64-bit
  h[5] = 1; // little endian
  h[6] = 1;
  h.writeUInt16LE(3, 16); // ET_DYN
  h.writeUInt16LE(machine, 18);
  return h;
}

/** A fake Debian 12 root: os-release, a merged /usr, glibc 2.36 and gcc 12, as the probe would find them. */
export function writeToyRootfs(root: string, opts: { glibc?: string; id?: string; versionId?: string } = {}): void {
  const glibc = opts.glibc ?? "2.36";
  writeTree(root, {
    "usr/lib/os-release": `PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=${opts.id ?? "debian"}\nVERSION_ID="${opts.versionId ?? "12"}"\n`,
    [`usr/lib/x86_64-linux-gnu/libc.so.6`]: `\x7fELF... GNU C Library (Debian GLIBC ${glibc}-9) stable release version ${glibc}.\n`,
    "usr/lib64/ld-linux-x86-64.so.2": "loader\n",
    "usr/bin/gcc-12": "not a compiler\n",
  });
  mkdirSync(join(root, "etc"), { recursive: true });
  mkdirSync(join(root, "usr/lib/gcc/x86_64-linux-gnu/12"), { recursive: true });
  writeFileSync(join(root, "usr/bin/dash"), elfHeader(0x3e));
  symlinkSync("../usr/lib/os-release", join(root, "etc/os-release"));
  symlinkSync("usr/bin", join(root, "bin"));
  symlinkSync("usr/lib", join(root, "lib"));
  symlinkSync("usr/lib64", join(root, "lib64"));
  symlinkSync("dash", join(root, "usr/bin/sh"));
  symlinkSync("gcc-12", join(root, "usr/bin/gcc"));
}

export interface ExampleRegistry {
  readonly root: string;
  readonly registry: string;
  readonly rootfs: string;
  readonly registryKey: SigningKey;
  readonly lockKey: SigningKey;
}

export function buildExampleRegistry(out: string): ExampleRegistry {
  const registryDir = join(out, "registry");
  if (existsSync(registryDir)) {
    // New keys would sign the same layer ids differently, which a registry refuses; start clean instead.
    throw new Error(`${out} already holds an example registry; remove it or choose another directory`);
  }
  const reg = LocalRegistry.init(registryDir);
  const registryKey = generateSigningKey();
  const lockKey = generateSigningKey();
  writeKeyPair(join(out, "registry"), registryKey, true);
  writeKeyPair(join(out, "lock"), lockKey, true);
  for (const l of TOY_LAYERS) {
    const src = join(out, "src", `${l.name}-${l.version}`);
    writeTree(src, l.files);
    const built = buildLayerFromDirectory(src, toySpec(l));
    reg.publishLayer(built.blob.blob, built.manifest, [registryKey]);
  }
  reg.publishFormation(formationOf(reg, TOY_FORMATION.name, TOY_FORMATION.version, TOY_FORMATION.members, "toy sequence tools"), [registryKey]);
  const rootfs = join(out, "rootfs");
  writeToyRootfs(rootfs);
  return { root: out, registry: registryDir, rootfs, registryKey, lockKey };
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const out = process.argv[2];
  if (out === undefined) {
    process.stderr.write("usage: node --import tsx examples/strata/build-registry.ts OUT\n");
    process.exit(2);
  }
  let ex: ExampleRegistry;
  try {
    ex = buildExampleRegistry(resolve(out));
  } catch (e) {
    process.stderr.write(`build-registry: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  }
  process.stdout.write(`registry ${ex.registry}\nrootfs   ${ex.rootfs}\nkeys     ${join(ex.root, "registry.pub")} (layers), ${join(ex.root, "lock.key")} (lockfile)\n`);
}
