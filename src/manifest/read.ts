/**
 * Reading manifest inputs from disk, with bounds: the file size is checked
 * before reading (limit max_input_bytes) and the nesting depth is checked
 * with a flat token scan before the recursive parser sees the text (limit
 * max_depth), so a hostile file cannot exhaust memory or the stack.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { createScanner } from "jsonc-parser";
import { CairnError, decodeUtf8, ioError, parseJsonText, type JsonModel } from "../core/index.ts";
import { DEFAULT_MANIFEST_LIMITS, type ManifestLimits } from "./declared.ts";
import { isManifestDocument, parseManifest } from "./document.ts";
import { ingestDevcontainer, type EnvManifest } from "./env-manifest.ts";

// jsonc-parser's SyntaxKind is an ambient const enum, which verbatimModuleSyntax cannot import.
const OPEN_BRACE = 1;
const CLOSE_BRACE = 2;
const OPEN_BRACKET = 3;
const CLOSE_BRACKET = 4;
const EOF = 17;

export function readBounded(path: string, maxBytes: number): Buffer {
  let fd: number;
  try {
    // O_NONBLOCK: a FIFO would otherwise block the open until a writer appears (no effect on regular files).
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (cause) {
    throw ioError(path, cause);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new CairnError("IO_ERROR", `${path} is not a regular file`, { path });
    if (st.size > maxBytes) {
      throw new CairnError("LIMIT_EXCEEDED", `limit max_input_bytes exceeded (${st.size} > ${maxBytes})`, {
        path,
        hint: "raise the limit max_input_bytes explicitly if this input is expected",
      });
    }
    // One byte more than fstat reported: a file that grows while it is read is refused, not truncated.
    const buf = Buffer.alloc(st.size + 1);
    let n = 0;
    for (;;) {
      const r = readSync(fd, buf, n, buf.length - n, null);
      if (r === 0) break;
      n += r;
      if (n > st.size) throw new CairnError("IO_ERROR", `${path} changed while it was read`, { path });
    }
    return buf.subarray(0, n);
  } catch (cause) {
    if (cause instanceof CairnError) throw cause;
    throw ioError(path, cause);
  } finally {
    closeSync(fd);
  }
}

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
  return parseInputText(decodeUtf8(readBounded(path, limits.max_input_bytes), path), path, limits);
}

/** Reads a manifest file and recomputes everything in it (see document.ts). */
export function readManifestFile(path: string, limits: ManifestLimits = DEFAULT_MANIFEST_LIMITS): EnvManifest {
  return parseManifest(readInputFile(path, limits));
}

export type Loaded = { kind: "manifest"; manifest: EnvManifest } | { kind: "devcontainer"; manifest: EnvManifest; excluded: string[] };

/** Reads either a manifest document or a devcontainer.json (told apart by the schema tag). */
export function loadManifestOrDevcontainer(path: string, limits: ManifestLimits = DEFAULT_MANIFEST_LIMITS): Loaded {
  const model = readInputFile(path, limits);
  if (isManifestDocument(model)) return { kind: "manifest", manifest: parseManifest(model) };
  const r = ingestDevcontainer(model, { limits });
  return { kind: "devcontainer", manifest: r.manifest, excluded: r.excluded };
}
