/**
 * Applying a devcontainer template: the folder a template author publishes
 * (`devcontainer-template.json` beside `.devcontainer.json` or
 * `.devcontainer/devcontainer.json`, as the Dev Container Templates reference
 * at containers.dev/implementors/templates lays it out) turned into the
 * devcontainer.json a user of the template has. The rules are the
 * devcontainers CLI's `templates apply` (its containerTemplatesOCI.ts): every
 * `${templateOption:NAME}` (its pattern, `\s*` around a `\w+` name) is
 * replaced by the option's value, the option's `default` when the user gave
 * none. A template as stored is not an environment (its image may read
 * `base:${templateOption:imageVariant}`); ingest refuses it and names this step.
 *
 * Where cairn is stricter than the CLI, and why:
 *   - an option the user names that the template does not declare, a value
 *     outside a string option's `enum`, or not `true`/`false` for a boolean
 *     option is refused, naming the option (the CLI substitutes anything;
 *     `proposals` is only a suggestion list and restricts nothing);
 *   - a reference to an undeclared option, or to one with no default that the
 *     user did not give, is refused (the CLI silently writes an empty string,
 *     which yields a different environment than the author meant);
 *   - a boolean default `false` is written `false` (the CLI skips falsy
 *     defaults and writes an empty string);
 *   - the value is inserted into the JSON string it stands in, escaped as JSON
 *     (the CLI splices raw text, so a value holding `"` could add a field the
 *     template never had); a reference outside a string or comment, or a value
 *     holding a control character, is refused, so no value changes the
 *     document's structure.
 * The model does no I/O: `applyTemplateText` works on the two texts;
 * `readTemplateDir` reads them from a folder, bounded.
 */
import { lstatSync } from "node:fs";
import { join } from "node:path";
import { createScanner } from "jsonc-parser";
import { CairnError, Checker, childPath, decodeUtf8, readFileBounded, type JsonModel } from "../core/index.ts";
import { DEFAULT_MANIFEST_LIMITS, type ManifestLimits } from "./declared.ts";
import { parseInputText } from "./read.ts";

/** One option of `devcontainer-template.json`, checked. */
export interface TemplateOption {
  readonly type: "string" | "boolean";
  /** The default as text (a boolean's is `true` or `false`); absent when the template gives none. */
  readonly default: string | undefined;
  /** The only values a string option may take, when the template restricts it. */
  readonly enum: readonly string[] | undefined;
}

export interface TemplateMetadata {
  readonly id: string;
  readonly options: ReadonlyMap<string, TemplateOption>;
}

/** One option as applied: its value and whether the user gave it or the template's default was used. */
export interface AppliedOption {
  readonly name: string;
  readonly value: string;
  readonly source: "given" | "default";
}

export interface AppliedTemplate {
  /** The template's `id`. */
  readonly id: string;
  /** The config file applied, relative to the template folder. */
  readonly config: string;
  /** The applied devcontainer.json text. */
  readonly text: string;
  /** Every option the config refers to, in name order, with the value it got. */
  readonly options: readonly AppliedOption[];
}

/** The CLI's pattern (containerTemplatesOCI.ts, replaceTemplatedValues). */
const REFERENCE = /\$\{templateOption:\s*(\w+?)\s*\}/g;

/** Fields of devcontainer-template.json: the reference's, plus the ones the CLI adds when it packages a template. */
const METADATA_FIELDS = [
  "id",
  "version",
  "name",
  "description",
  "documentationURL",
  "licenseURL",
  "options",
  "platforms",
  "publisher",
  "keywords",
  "optionalPaths",
  "type",
  "fileCount",
  "featureIds",
  "files",
] as const;
const STRING_OPTION_FIELDS = ["type", "default", "description", "enum", "proposals"] as const;
const BOOLEAN_OPTION_FIELDS = ["type", "default", "description"] as const;
/** An option name the CLI's pattern can refer to. */
const OPTION_NAME = /^\w+$/;

/** Parses a `devcontainer-template.json` model strictly; every issue is collected. */
export function parseTemplateMetadata(model: JsonModel, source = "devcontainer-template.json"): TemplateMetadata {
  const c = new Checker("MODEL_VALUE");
  const root = c.object(model, "", METADATA_FIELDS);
  const id = root === undefined ? undefined : c.requiredString(root, "id", "", { nonEmpty: true });
  const options = new Map<string, TemplateOption>();
  const declared = root?.options === undefined ? undefined : c.object(root.options, "/options");
  for (const [name, v] of Object.entries(declared ?? {})) {
    const path = childPath("/options", name);
    if (!OPTION_NAME.test(name)) {
      c.add(path, "an option name must be letters, digits and underscores (the only names ${templateOption:…} can refer to)", "MODEL_VALUE");
      continue;
    }
    const o = c.object(v, path);
    if (o === undefined) continue;
    const type = c.requiredString(o, "type", path);
    if (type !== "string" && type !== "boolean") {
      if (type !== undefined) c.add(childPath(path, "type"), 'must be "string" or "boolean"', "MODEL_VALUE");
      continue;
    }
    c.object(o, path, type === "string" ? STRING_OPTION_FIELDS : BOOLEAN_OPTION_FIELDS);
    if (o.description !== undefined) c.string(o.description, childPath(path, "description"));
    if (type === "boolean") {
      // The templates repository writes boolean defaults as strings ("true"); the reference as booleans.
      const d = o.default;
      let def: string | undefined;
      if (typeof d === "boolean") def = String(d);
      else if (d === "true" || d === "false") def = d;
      else if (d !== undefined) c.add(childPath(path, "default"), "a boolean option's default must be true or false", "MODEL_VALUE");
      options.set(name, { type, default: def, enum: undefined });
      continue;
    }
    const def = o.default === undefined ? undefined : c.string(o.default, childPath(path, "default"));
    const allowed = o.enum === undefined ? undefined : c.stringArray(o.enum, childPath(path, "enum"));
    if (o.proposals !== undefined) c.stringArray(o.proposals, childPath(path, "proposals"));
    if (allowed !== undefined && allowed.length === 0) c.add(childPath(path, "enum"), "an enum must list at least one value", "MODEL_VALUE");
    if (allowed !== undefined && def !== undefined && !allowed.includes(def))
      c.add(childPath(path, "default"), "the default is not one of the option's enum values", "TEMPLATE_OPTION_VALUE");
    options.set(name, { type, default: def, enum: allowed });
  }
  c.done(`${source} is not a valid devcontainer template`);
  return { id: id!, options };
}

/** Control characters (and the JSON line separators) would end a comment or change a document's lines: never inserted. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** The rules every inserted value obeys, given or the template's default: it must not change the document's structure. */
function checkText(name: string, value: string, limits: ManifestLimits, what: string): void {
  const refuse = (why: string): never => {
    throw new CairnError("TEMPLATE_OPTION_VALUE", `${what} of option ${JSON.stringify(name)} ${why}`, { path: childPath("/options", name) });
  };
  if (value.length > limits.max_string_length) refuse(`exceeds limit max_string_length (${limits.max_string_length})`);
  if (CONTROL.test(value)) refuse("holds a control character");
  if (LONE_SURROGATE.test(value)) refuse("holds a lone surrogate");
}

function optionValue(meta: TemplateMetadata, name: string, value: string, limits: ManifestLimits): void {
  const o = meta.options.get(name);
  const path = childPath("/options", name);
  if (o === undefined) {
    throw new CairnError("TEMPLATE_OPTION_UNKNOWN", `template ${JSON.stringify(meta.id)} declares no option ${JSON.stringify(name)}`, {
      path,
      hint: `the template declares: ${[...meta.options.keys()].join(", ") || "no options"}`,
    });
  }
  const refuse = (why: string, hint?: string): never => {
    throw new CairnError("TEMPLATE_OPTION_VALUE", `the value given for option ${JSON.stringify(name)} ${why}`, { path, ...(hint ? { hint } : {}) });
  };
  checkText(name, value, limits, "the value given");
  if (o.type === "boolean" && value !== "true" && value !== "false") refuse("is not true or false (a boolean option)");
  if (o.enum !== undefined && !o.enum.includes(value))
    refuse(
      "is not one of the option's enum values",
      `allowed: ${o.enum
        .slice(0, 20)
        .map((v) => JSON.stringify(v))
        .join(", ")}${o.enum.length > 20 ? ", …" : ""}`,
    );
}

/**
 * The values of the options a template is applied with: every given option
 * is checked against the template (unknown names and values outside the
 * option's type or enum are refused, naming the option); the rest take the
 * template's defaults.
 */
export function resolveTemplateOptions(
  meta: TemplateMetadata,
  given: ReadonlyMap<string, string>,
  limits: ManifestLimits = DEFAULT_MANIFEST_LIMITS,
): Map<string, AppliedOption> {
  const out = new Map<string, AppliedOption>();
  for (const [name, value] of given) {
    optionValue(meta, name, value, limits);
    out.set(name, { name, value, source: "given" });
  }
  for (const [name, o] of meta.options) if (!out.has(name) && o.default !== undefined) out.set(name, { name, value: o.default, source: "default" });
  return out;
}

// jsonc-parser's SyntaxKind is an ambient const enum, which verbatimModuleSyntax cannot import.
const STRING = 10;
const LINE_COMMENT = 12;
const BLOCK_COMMENT = 13;
const EOF = 17;

/**
 * Applies `values` to the config text of template `meta` (`source` names the
 * file in errors). The text must be a valid devcontainer.json apart from its
 * references; the result is one too.
 */
export function applyTemplateText(
  meta: TemplateMetadata,
  text: string,
  values: ReadonlyMap<string, AppliedOption>,
  source: string,
  limits: ManifestLimits = DEFAULT_MANIFEST_LIMITS,
): { text: string; used: AppliedOption[] } {
  // Tokens first: a reference outside a string or comment is named as such, not as the syntax error it makes.
  const scanner = createScanner(text, false);
  const tokens: { kind: number; raw: string }[] = [];
  let outside = "";
  for (let t = scanner.scan(); t !== EOF; t = scanner.scan()) {
    const raw = text.slice(scanner.getTokenOffset(), scanner.getTokenOffset() + scanner.getTokenLength());
    tokens.push({ kind: t, raw });
    if (t !== STRING && t !== LINE_COMMENT && t !== BLOCK_COMMENT) outside += raw;
  }
  if (new RegExp(REFERENCE.source).test(outside)) {
    throw new CairnError("TEMPLATE_INVALID", `${source} has a \${templateOption:…} outside a JSON string`, {
      path: source,
      hint: "cairn substitutes template options only inside strings and comments, so that no value can change the document's structure",
    });
  }
  parseInputText(text, source, limits); // strict JSONC (duplicate keys, depth, …) before anything is substituted
  const used = new Map<string, AppliedOption>();
  const optionFor = (name: string): AppliedOption => {
    const v = values.get(name);
    if (v !== undefined) {
      if (v.source === "default") checkText(name, v.value, limits, "the template's default");
      used.set(name, v);
      return v;
    }
    if (!meta.options.has(name)) {
      throw new CairnError(
        "TEMPLATE_OPTION_UNKNOWN",
        `${source} refers to \${templateOption:${name}}, which template ${JSON.stringify(meta.id)} does not declare`,
        {
          path: source,
          hint: "the template is inconsistent; its author must declare the option in devcontainer-template.json",
        },
      );
    }
    throw new CairnError("TEMPLATE_OPTION_VALUE", `option ${JSON.stringify(name)} has no default and no value was given`, {
      path: childPath("/options", name),
      hint: `give it: --option ${name}=VALUE`,
    });
  };
  // The output's size is counted as it grows, so that many references to a long value stop at the limit
  // instead of building a string of gigabytes first.
  let size = Buffer.byteLength(text, "utf8");
  const insert = (reference: string, value: string): string => {
    size += Buffer.byteLength(value, "utf8") - Buffer.byteLength(reference, "utf8");
    if (size > limits.max_input_bytes) {
      throw new CairnError("LIMIT_EXCEEDED", `limit max_input_bytes exceeded by the applied ${source} (${limits.max_input_bytes} bytes)`, {
        path: source,
        hint: "the template's options expand to more than a devcontainer.json may hold",
      });
    }
    return value;
  };
  const parts = tokens.map(({ kind, raw }) => {
    // JSON.stringify escapes `"`, `\` and control characters: the value stays inside its string.
    if (kind === STRING) return raw.replace(REFERENCE, (m, name: string) => insert(m, JSON.stringify(optionFor(name).value).slice(1, -1)));
    if (kind !== LINE_COMMENT && kind !== BLOCK_COMMENT) return raw;
    return raw.replace(REFERENCE, (m, name: string) => {
      const v = optionFor(name);
      if (kind === BLOCK_COMMENT && v.value.includes("*/")) {
        throw new CairnError("TEMPLATE_OPTION_VALUE", `the value of option ${JSON.stringify(name)} would end a comment of ${source}`, {
          path: childPath("/options", name),
        });
      }
      return insert(m, v.value);
    });
  });
  const out = parts.join("");
  // A value inside a key can make two keys equal, or a `__proto__` key: the result is parsed as strictly as the input.
  parseInputText(out, source, limits);
  return { text: out, used: [...used.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)) };
}

/** The config files a template may hold, in the CLI's terms (one of them, never both). */
const CONFIGS = [".devcontainer.json", join(".devcontainer", "devcontainer.json")] as const;

function isKind(path: string, kind: "file" | "dir"): boolean {
  try {
    const st = lstatSync(path);
    return kind === "file" ? st.isFile() : st.isDirectory();
  } catch {
    return false;
  }
}

/** Reads a template folder: its metadata and its one config file, each bounded by max_input_bytes. */
export function readTemplateDir(dir: string, limits: ManifestLimits = DEFAULT_MANIFEST_LIMITS): { meta: TemplateMetadata; config: string; text: string } {
  const read = (rel: string): string => {
    const p = join(dir, rel);
    // O_NOFOLLOW in readFileBounded: a symlinked file is refused, not followed out of the folder.
    return decodeUtf8(readFileBounded(p, limits.max_input_bytes, "max_input_bytes", { missing: "TEMPLATE_INVALID", notRegular: "TEMPLATE_INVALID" }), p);
  };
  const metaPath = join(dir, "devcontainer-template.json");
  if (!isKind(metaPath, "file")) {
    throw new CairnError("TEMPLATE_INVALID", `${dir} is not a devcontainer template: it has no devcontainer-template.json (a regular file)`, {
      path: metaPath,
      hint: "give the folder that holds devcontainer-template.json (in devcontainers/templates, src/<name>)",
    });
  }
  const meta = parseTemplateMetadata(parseInputText(read("devcontainer-template.json"), metaPath, limits), metaPath);
  // `.devcontainer` must be a directory, not a symlink leading out of the template.
  const present = CONFIGS.filter((c) => isKind(join(dir, c), "file") && (c === CONFIGS[0] || isKind(join(dir, ".devcontainer"), "dir")));
  if (present.length !== 1) {
    throw new CairnError(
      "TEMPLATE_INVALID",
      present.length === 0
        ? `template ${JSON.stringify(meta.id)} has no .devcontainer.json or .devcontainer/devcontainer.json (a regular file in a directory)`
        : `template ${JSON.stringify(meta.id)} has both .devcontainer.json and .devcontainer/devcontainer.json`,
      { path: dir, hint: "a template holds exactly one devcontainer.json (the Dev Container Templates reference)" },
    );
  }
  const config = present[0]!;
  return { meta, config, text: read(config) };
}

/**
 * Applies the template in `dir` with the options `given` (name → value): the
 * devcontainer.json a user of the template has. See the module comment.
 */
export function applyTemplate(dir: string, given: ReadonlyMap<string, string> = new Map(), limits: ManifestLimits = DEFAULT_MANIFEST_LIMITS): AppliedTemplate {
  const { meta, config, text } = readTemplateDir(dir, limits);
  const values = resolveTemplateOptions(meta, given, limits);
  const applied = applyTemplateText(meta, text, values, config, limits);
  return { id: meta.id, config, text: applied.text, options: applied.used };
}
