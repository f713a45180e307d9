// Reading the C7 vector files: the case format (README.md) and both kinds,
// standard and profile, for every runner of the suite.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export interface Expect {
  address?: string;
  not_address?: string;
  extension_address?: string;
  not_extension_address?: string;
  core_has?: { [k: string]: unknown };
  extension_has?: { [k: string]: unknown };
  pinned?: boolean;
  image_pinned?: boolean;
  unpinned?: string[];
  refused?: string;
  paths?: string[];
  resume?: "ok";
}
export interface Case {
  name: string;
  /** Profile cases: the profile rules (profile-rules.json) the case exercises. */
  rules?: string[];
  input?: string;
  snapshot?: string;
  offered?: string;
  allow_unpinned?: boolean;
  expect: Expect;
}

const C7 = fileURLToPath(new URL(".", import.meta.url));
export const KINDS = ["standard", "profile"] as const;
export type Kind = (typeof KINDS)[number];

/** Every vector file of one kind: [file name, group document]. */
export function vectorFiles(kind: Kind): [string, { group: string; description: string; cases: Case[] }][] {
  const dir = join(C7, "vectors", kind);
  return readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .sort()
    .map((f) => [f, JSON.parse(readFileSync(join(dir, f), "utf8"))]);
}

export const PROFILE_RULES = (JSON.parse(readFileSync(join(C7, "profile-rules.json"), "utf8")) as { rules: { id: string; rule: string; source: string }[] })
  .rules;
