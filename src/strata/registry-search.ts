/** `cairn search`: user-selectable layers and formations whose name contains a term, with every version (highest first). */
import type { LayerRegistry } from "./registry.ts";
import { compareBytes } from "../core/index.ts";
import { compareVersions } from "./version.ts";

export interface SearchHit {
  readonly kind: "layer" | "formation";
  readonly name: string;
  readonly versions: string[];
  readonly provides: string[];
}

export function searchRegistries(regs: readonly LayerRegistry[], term: string): SearchHit[] {
  const hits = new Map<string, SearchHit>();
  const add = (kind: SearchHit["kind"], name: string, version: string, provides: string[]): void => {
    if (!name.includes(term.toLowerCase())) return;
    const key = `${kind}:${name}`;
    const h = hits.get(key) ?? { kind, name, versions: [], provides: [] };
    if (!h.versions.includes(version)) h.versions.push(version);
    for (const p of provides) if (!h.provides.includes(p)) h.provides.push(p);
    hits.set(key, h);
  };
  for (const reg of regs) {
    for (const l of reg.listLayers()) {
      const m = l.value;
      if (m.user_selectable)
        add(
          "layer",
          m.name,
          m.version,
          m.provides.map((c) => `${c.name}@${c.version}`),
        );
    }
    for (const f of reg.listFormations()) add("formation", f.value.name, f.value.version, []);
  }
  const out = [...hits.values()];
  for (const h of out) {
    h.versions.sort((a, b) => compareVersions(b, a));
    h.provides.sort(compareBytes);
  }
  return out.sort((a, b) => compareBytes(`${a.kind}:${a.name}`, `${b.kind}:${b.name}`));
}
