/**
 * Architectures and base names. A base is named by its os-release ID and the
 * major part of VERSION_ID (`debian12`, `ubuntu24`); Amazon Linux's ID `amzn`
 * is spelled `al` (`al2023`), as its users write it. This is the single
 * definition of that naming.
 */
export const ARCHES = ["x86_64", "aarch64", "riscv64", "ppc64le", "s390x"] as const;
export type Arch = (typeof ARCHES)[number];

export const BASE_NAME = /^[a-z][a-z-]*[0-9]+$/;

/** os-release IDs whose base name uses a different, customary spelling. */
const ID_SPELLING: Readonly<Record<string, string>> = { amzn: "al" };

/** `debian` + `12.5` → `debian12`. Returns undefined when VERSION_ID has no leading number. */
export function baseNameOf(osId: string, versionId: string): string | undefined {
  const major = /^([0-9]+)/.exec(versionId)?.[1];
  if (major === undefined || !/^[a-z][a-z-]*$/.test(osId)) return undefined;
  return `${ID_SPELLING[osId] ?? osId}${major}`;
}

/** Maps Node's `process.arch` to cairn's arch names. */
export function archOfNode(nodeArch: string): Arch | undefined {
  const m: Record<string, Arch> = { x64: "x86_64", arm64: "aarch64", riscv64: "riscv64", ppc64: "ppc64le", s390x: "s390x" };
  return m[nodeArch];
}

/**
 * Other spellings of an arch that profiles may use: Strata (a Go program)
 * writes GOARCH names, `arm64` and `amd64`. They are read as cairn's arch and
 * only the canonical name is ever written (profile round trip, lockfile), so
 * one machine has one spelling in every identity.
 */
export const ARCH_ALIASES: Readonly<Record<string, Arch>> = { arm64: "aarch64", amd64: "x86_64" };

/** The canonical arch for `unsafe`, or undefined when it is neither an arch nor an alias of one. */
export function canonicalArch(unsafe: string): Arch | undefined {
  if ((ARCHES as readonly string[]).includes(unsafe)) return unsafe as Arch;
  return Object.hasOwn(ARCH_ALIASES, unsafe) ? ARCH_ALIASES[unsafe] : undefined;
}
