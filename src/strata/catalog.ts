/**
 * The catalog: every layer and formation the resolver may choose from,
 * indexed by name and id, with the registry (and its
 * trusted keys) each came from. Building it parses manifests but decides no
 * trust; the attestation stage does that for what is chosen.
 */
import { compareBytes, CairnError, type VerifyingKey } from "../core/index.ts";
import type { Formation } from "./formation-document.ts";
import type { LayerManifest } from "./layer-manifest.ts";
import type { SignedDocument } from "./registry.ts";
import { compareVersions } from "./version.ts";

export interface CatalogSource {
  /** How the registry was named (a path or file:// URL), for messages and the lockfile. */
  readonly url: string;
  readonly keys: readonly VerifyingKey[];
}

export interface CatalogLayer {
  readonly doc: SignedDocument<LayerManifest>;
  readonly source: CatalogSource;
}

export interface CatalogFormation {
  readonly doc: SignedDocument<Formation>;
  readonly source: CatalogSource;
}

export class Catalog {
  readonly byId = new Map<string, CatalogLayer>();
  /** Layers by name, highest version first. */
  readonly byName = new Map<string, CatalogLayer[]>();
  /** Formations by name, highest version first. */
  readonly formations = new Map<string, CatalogFormation[]>();

  addLayer(layer: CatalogLayer): void {
    const m = layer.doc.value;
    const existing = this.byId.get(m.id);
    if (existing !== undefined) {
      if (existing.doc.payloadSha256 === layer.doc.payloadSha256) return;
      throw new CairnError("REGISTRY_INVALID", `layer ${m.id} is published differently in ${existing.source.url} and ${layer.source.url}`, {
        path: m.id,
        hint: "a layer id must name one manifest; remove one of the registries",
      });
    }
    this.byId.set(m.id, layer);
    const list = this.byName.get(m.name) ?? [];
    list.push(layer);
    this.byName.set(m.name, list);
  }

  addFormation(f: CatalogFormation): void {
    const list = this.formations.get(f.doc.value.name) ?? [];
    if (list.some((x) => x.doc.value.version === f.doc.value.version && x.doc.payloadSha256 !== f.doc.payloadSha256)) {
      throw new CairnError("REGISTRY_INVALID", `formation ${f.doc.value.name}@${f.doc.value.version} is published differently in two registries`, {
        path: f.doc.value.name,
      });
    }
    list.push(f);
    this.formations.set(f.doc.value.name, list);
  }

  /** Sorts every index; call once after adding everything. */
  seal(): this {
    const desc = (a: { doc: { value: { version: string } } }, b: { doc: { value: { version: string } } }): number =>
      compareVersions(b.doc.value.version, a.doc.value.version);
    for (const list of this.byName.values()) list.sort((a, b) => desc(a, b) || compareBytes(a.doc.value.id, b.doc.value.id));
    for (const list of this.formations.values()) list.sort(desc);
    return this;
  }
}

/** Reads every layer and formation of the given registries into a sealed catalog. */
export function catalogFromRegistries(
  regs: readonly { registry: { listLayers(): SignedDocument<LayerManifest>[]; listFormations(): SignedDocument<Formation>[] }; source: CatalogSource }[],
): Catalog {
  const catalog = new Catalog();
  for (const { registry, source } of regs) {
    for (const doc of registry.listLayers()) catalog.addLayer({ doc, source });
    for (const doc of registry.listFormations()) catalog.addFormation({ doc, source });
  }
  return catalog.seal();
}
