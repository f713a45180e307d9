/**
 * `cairn search`: layers and formations whose name contains a term, with
 * every version (highest first). By default only user-selectable layers are
 * listed (what a profile may name); `all` adds dependency-only layers, each
 * hit saying which it is. `arch` and `abi` keep what runs on that arch and
 * ABI by the resolver's own rules (resolve/match.ts: `noarch` runs on every
 * arch, abi `none` on every ABI), so search never shows a layer the resolver
 * would refuse for that platform, nor hides one it would take. A formation
 * has no arch of its own: under a filter it is listed when every member the
 * same registry holds runs there (a member the registry lacks cannot be
 * shown to run, so the formation is left out).
 */
import { CairnError, compareBytes } from "../core/index.ts";
import type { Formation } from "./formation-document.ts";
import { ABIS, type Abi, type LayerManifest } from "./layer-manifest.ts";
import { ARCHES, ARCH_ALIASES, canonicalArch, type Arch } from "./platform.ts";
import type { LayerRegistry } from "./registry.ts";
import { abiRuns, archRuns } from "./resolve/match.ts";
import { compareVersions } from "./version.ts";

export interface SearchHit {
  readonly kind: "layer" | "formation";
  readonly name: string;
  readonly versions: string[];
  readonly provides: string[];
  /** The arches of the matching layers (`noarch` included as written); a formation's are its members'. */
  readonly arches: string[];
  readonly abis: string[];
  /** False for dependency-only layers (listed only with `all`); always true for a formation. */
  readonly user_selectable: boolean;
}

export interface SearchOptions {
  /** Only what runs on this arch (cairn's canonical name). */
  readonly arch?: Arch;
  /** Only what runs on this ABI. */
  readonly abi?: Abi;
  /** Formations only, no layers. */
  readonly formationsOnly?: boolean;
  /** Include dependency-only (not user-selectable) layers. */
  readonly all?: boolean;
}

/**
 * The arch and ABI filters as a user spells them: an arch or one of its
 * aliases (Strata's `arm64`, `amd64`), an ABI of `ABIS`. Anything else is a
 * usage error naming the flag and what it takes, never an empty result that
 * looks like "nothing is built for that".
 */
export function searchPlatform(unsafe: { arch?: string; abi?: string }): Pick<SearchOptions, "arch" | "abi"> {
  const out: { arch?: Arch; abi?: Abi } = {};
  if (unsafe.arch !== undefined) {
    const arch = canonicalArch(unsafe.arch);
    if (arch === undefined) {
      throw new CairnError("USAGE", `--arch must be one of ${[...ARCHES, ...Object.keys(ARCH_ALIASES)].join(", ")}`, { path: "--arch" });
    }
    out.arch = arch;
  }
  if (unsafe.abi !== undefined) {
    if (!(ABIS as readonly string[]).includes(unsafe.abi)) throw new CairnError("USAGE", `--abi must be one of ${ABIS.join(", ")}`, { path: "--abi" });
    out.abi = unsafe.abi as Abi;
  }
  return out;
}

function runs(m: LayerManifest, o: SearchOptions): boolean {
  return (o.arch === undefined || archRuns(m.arch, o.arch)) && (o.abi === undefined || abiRuns(m.abi, o.abi));
}

/** The members of `f` that `reg` holds, or undefined when it lacks one. */
function membersOf(f: Formation, byId: ReadonlyMap<string, LayerManifest>): LayerManifest[] | undefined {
  const out: LayerManifest[] = [];
  for (const m of f.layers) {
    const layer = byId.get(m.id);
    if (layer === undefined || layer.sha256 !== m.sha256) return undefined;
    out.push(layer);
  }
  return out;
}

export function searchRegistries(regs: readonly LayerRegistry[], term: string, options: SearchOptions = {}): SearchHit[] {
  const hits = new Map<string, SearchHit>();
  const filtered = options.arch !== undefined || options.abi !== undefined;
  const add = (kind: SearchHit["kind"], name: string, selectable: boolean, version: string, layers: readonly LayerManifest[]): void => {
    if (!name.includes(term.toLowerCase())) return;
    const key = `${kind}:${name}:${selectable}`;
    const h = hits.get(key) ?? { kind, name, versions: [], provides: [], arches: [], abis: [], user_selectable: selectable };
    const put = (list: string[], v: string): void => {
      if (!list.includes(v)) list.push(v);
    };
    put(h.versions, version);
    for (const m of layers) {
      put(h.arches, m.arch);
      put(h.abis, m.abi);
      if (kind === "layer") for (const c of m.provides) put(h.provides, `${c.name}@${c.version}`);
    }
    hits.set(key, h);
  };
  for (const reg of regs) {
    const layers = reg.listLayers().map((l) => l.value);
    if (options.formationsOnly !== true) {
      for (const m of layers) if ((m.user_selectable || options.all === true) && runs(m, options)) add("layer", m.name, m.user_selectable, m.version, [m]);
    }
    const byId = new Map(layers.map((m) => [m.id, m]));
    for (const f of reg.listFormations()) {
      const members = membersOf(f.value, byId);
      if (filtered && (members === undefined || !members.every((m) => runs(m, options)))) continue;
      add("formation", f.value.name, true, f.value.version, members ?? []);
    }
  }
  const out = [...hits.values()];
  for (const h of out) {
    h.versions.sort((a, b) => compareVersions(b, a));
    h.provides.sort(compareBytes);
    h.arches.sort(compareBytes);
    h.abis.sort(compareBytes);
  }
  const order = (h: SearchHit): string => `${h.kind}:${h.name}:${h.user_selectable ? 0 : 1}`;
  return out.sort((a, b) => compareBytes(order(a), order(b)));
}
