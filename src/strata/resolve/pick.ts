/** What the resolver stages pass along: a chosen layer and why it was chosen. */
import type { CatalogLayer } from "../catalog.ts";

export interface Pick {
  readonly layer: CatalogLayer;
  /** `name@version` of the formation that brought this layer in, if any. */
  readonly from_formation?: string;
  /** Members of one formation keep the formation's order: the member before this one. */
  readonly after_in_formation?: string;
  /** The profile refs that asked for it, as written canonically (`python@3.12`, `formation:bio-seq@2026.03`). */
  readonly requested_by?: readonly string[];
}

export function pickId(p: Pick): string {
  return p.layer.doc.value.id;
}
