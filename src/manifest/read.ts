/**
 * Reading manifest inputs from disk, with bounds: the file is read by core's
 * one bounded reader (a regular file, not a symlink or FIFO, size checked
 * against limit max_input_bytes before reading, a file that grows or shrinks
 * while read refused) and the nesting depth is checked
 * with a flat token scan before the recursive parser sees the text (limit
 * max_depth), so a hostile file cannot exhaust memory or the stack.
 */
import { createScanner } from "jsonc-parser";
import { CairnError, decodeUtf8, parseJsonText, readFileBounded, type JsonModel } from "../core/index.ts";
import { DEFAULT_MANIFEST_LIMITS, type ManifestLimits } from "./declared.ts";
import { isManifestDocument, parseManifest } from "./document.ts";
import { ingestDevcontainer, type EnvManifest } from "./env-manifest.ts";

// jsonc-parser's SyntaxKind is an ambient const enum, which verbatimModuleSyntax cannot import.
const OPEN_BRACE = 1;
const CLOSE_BRACE = 2;
const OPEN_BRACKET = 3;
const CLOSE_BRACKET = 4;
const EOF = 17;

/** Refuses text nested deeper than `max` before any recursive parser runs. */
export function checkDepth(text: string, max: number, source: string): void {
  const scanner = createScanner(text, false);
  let depth = 0;
  for (let t = scanner.scan(); t !== EOF; t = scanner.scan()) {
    if (t === OPEN_BRACE || t === OPEN_BRACKET) {
      if (++depth > max) {
        throw new CairnError("LIMIT_EXCEEDED", `limit max_depth exceeded (${source} nests deeper than ${max})`, {
          path: "",
          hint: "raise the limit max_depth explicitly if this input is expected",
        });
      }
    } else if (t === CLOSE_BRACE || t === CLOSE_BRACKET) depth--;
  }
}

/** Parses input text (JSONC: devcontainer.json allows comments) within the depth limit. */
export function parseInputText(text: string, source: string, limits: ManifestLimits = DEFAULT_MANIFEST_LIMITS): JsonModel {
  checkDepth(text, limits.max_depth, source);
  return parseJsonText(text, { jsonc: true, source });
}

export function readInputFile(path: string, limits: ManifestLimits = DEFAULT_MANIFEST_LIMITS): JsonModel {
  // O_NOFOLLOW (in readFileBounded): a devcontainer.json that is a symlink is refused, not followed.
  const bytes = readFileBounded(path, limits.max_input_bytes, "max_input_bytes", {
    limitHint: "raise the limit max_input_bytes explicitly if this input is expected",
  });
  return parseInputText(decodeUtf8(bytes, path), path, limits);
}

/** Reads a manifest file and recomputes everything in it (see document.ts). */
export function readManifestFile(path: string, limits: ManifestLimits = DEFAULT_MANIFEST_LIMITS): EnvManifest {
  return parseManifest(readInputFile(path, limits));
}

export type Loaded = { kind: "manifest"; manifest: EnvManifest } | { kind: "devcontainer"; manifest: EnvManifest; excluded: string[] };

/**
 * Reads either a manifest document or a devcontainer.json (told apart by the
 * schema tag). `featuresDir` pins the local features of a devcontainer.json
 * (a manifest document carries its pins already, checked by parseManifest).
 */
export function loadManifestOrDevcontainer(path: string, limits: ManifestLimits = DEFAULT_MANIFEST_LIMITS, options: { featuresDir?: string } = {}): Loaded {
  const model = readInputFile(path, limits);
  if (isManifestDocument(model)) return { kind: "manifest", manifest: parseManifest(model) };
  const r = ingestDevcontainer(model, { limits, ...(options.featuresDir === undefined ? {} : { featuresDir: options.featuresDir }) });
  return { kind: "devcontainer", manifest: r.manifest, excluded: r.excluded };
}
