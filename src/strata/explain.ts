/** `lock explain`: what a lockfile's EnvironmentID covers and what it does not, from the one definition in env-id.ts. */
import { scopeFieldNames } from "../core/index.ts";
import { ENVIRONMENT_ID_SCHEMA, ENVIRONMENT_ID_SCOPE } from "./env-id.ts";

export interface Explanation {
  readonly schema: string;
  readonly hashed: Readonly<Record<string, readonly string[]>>;
  readonly excluded: Readonly<Record<string, Readonly<Record<string, string>>>>;
  readonly promises: readonly string[];
  readonly does_not_promise: readonly string[];
}

export const PROMISES = [
  "the same base facts (name, arch, ABI and the probed capabilities behind base.digest)",
  "the same layer bytes (blob sha256 and size) mounted in the same order",
  "the same env, on_ready commands, defaults, package requests, mutable-layer spec and host requirements",
] as const;

export const DOES_NOT_PROMISE = [
  "what on_ready commands do when they run (network, clock, randomness)",
  "what a package manager installs for a request without a digest (pip/conda/cran resolve at install time)",
  "what is written into a mutable upper layer after start",
  "anything about a base recorded as source: declared (it was not probed)",
  "who signed: the signatures and verification policy are provenance, shown by lock verify and lock provenance",
] as const;

/** The lockfile objects the explanation groups fields by, and where each sits in the scope's pointers. */
const OBJECTS = { lockfile: "", base: "/base", layer: "/layers/*" } as const;

export function explainScope(): Explanation {
  const s = ENVIRONMENT_ID_SCOPE;
  const hashed: Record<string, readonly string[]> = {};
  const excluded: Record<string, Record<string, string>> = {};
  for (const [obj, at] of Object.entries(OBJECTS)) {
    hashed[obj] = scopeFieldNames(s, "covers", at);
    excluded[obj] = Object.fromEntries(scopeFieldNames(s, "excludes", at).map((f) => [f, (s.excludes as Record<string, string>)[`${at}/${f}`]!]));
  }
  return { schema: ENVIRONMENT_ID_SCHEMA, hashed, excluded, promises: PROMISES, does_not_promise: DOES_NOT_PROMISE };
}

export function explainText(): string {
  const e = explainScope();
  const lines = [`EnvironmentID = sha256 of the JCS encoding of the ${e.schema} hash input`, "", "covered:"];
  for (const [obj, fields] of Object.entries(e.hashed)) lines.push(`  ${obj}: ${fields.join(", ")}`);
  lines.push("", "not covered, and why:");
  for (const [obj, fields] of Object.entries(e.excluded)) for (const [f, why] of Object.entries(fields)) lines.push(`  ${obj}.${f}: ${why}`);
  lines.push("", "equal IDs promise:", ...e.promises.map((p) => `  - ${p}`), "", "equal IDs do not promise:", ...e.does_not_promise.map((p) => `  - ${p}`));
  return lines.join("\n");
}
