/**
 * The share of real devcontainer.json files cairn gives an identity to, per
 * repository: as stored, with templates applied by `cairn manifest
 * apply-template` (the library's applyTemplate, every option at its
 * default), and the standard's ceiling. The files are not part of the
 * repository; README.md says where the recorded figures come from.
 *
 *   node --import tsx bench/manifest/real-files.ts [NAME=]SOURCE... [--list]
 *
 * A SOURCE is a directory, or a bare git directory (such as the mirrors the
 * session's fetch tool writes, /work/.mirror/OWNER+NAME/repo), whose HEAD
 * tree is exported to a scratch directory first. NAME labels its row (by
 * default OWNER/NAME from a mirror path, else the directory's name). Every
 * file whose name ends in `devcontainer.json` is one input.
 *
 * Columns:
 *   as stored         `ingestDevcontainer` accepts the file as it is.
 *   templates applied a file in a devcontainer template folder (one with
 *                     devcontainer-template.json beside `.devcontainer.json`
 *                     or `.devcontainer/`) is first applied with its
 *                     defaults by applyTemplate; other files as stored.
 *   standard allows   the file holds none of the fields the standard refuses
 *                     (the `refused` class of FIELD_SCOPE: its list of image
 *                     builds, Compose, lifecycle commands and engine flags,
 *                     with their companions context, service, runServices
 *                     and initializeCommand). The ceiling: a file above it
 *                     cannot get an identity under the standard.
 *   standard, strictly the minimal standard-only implementation of the C7
 *                     tests (tests/conformance/c7/standard-only.ts) accepts
 *                     the file (templates applied): the seed read literally,
 *                     where every field it does not name is unknown and
 *                     refused. It shows what cairn's profile adds.
 * A file that does not parse as JSONC is in no column.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, relative, resolve } from "node:path";
import { isCairnError, isJsonObject, type JsonModel } from "../../src/core/index.ts";
import { applyTemplate, ingestDevcontainer, MANIFEST_FIELD_SCOPE, readManifestInput } from "../../src/manifest/index.ts";
import { parseInputText } from "../../src/manifest/read.ts";
import { standardIngest } from "../../tests/conformance/c7/standard-only.ts";

function files(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    const st = statSync(p, { throwIfNoEntry: false });
    if (st?.isDirectory()) out.push(...files(p));
    else if (st?.isFile() && name.endsWith("devcontainer.json")) out.push(p);
  }
  return out;
}

const args = process.argv.slice(2);
const list = args.includes("--list");
const sources = args.filter((a) => !a.startsWith("--"));
if (sources.length === 0) {
  console.error("usage: real-files.ts [NAME=]SOURCE... [--list]");
  process.exit(2);
}
const scratch = mkdtempSync(join(tmpdir(), "cairn-real-files-"));

const isBareGit = (p: string): boolean => existsSync(join(p, "HEAD")) && existsSync(join(p, "objects")) && !existsSync(join(p, ".git"));

/** The folder to read and the label and revision of one SOURCE argument. */
function open(arg: string, i: number): { name: string; dir: string; revision: string } {
  const eq = arg.indexOf("=");
  const path = resolve(eq > 0 ? arg.slice(eq + 1) : arg);
  const mirror = /([^/]+)\+([^/]+)\/repo\/?$/.exec(path);
  const name = eq > 0 ? arg.slice(0, eq) : mirror ? `${mirror[1]}/${mirror[2]}` : basename(path);
  if (!isBareGit(path)) return { name, dir: path, revision: "(directory)" };
  const dir = join(scratch, String(i));
  mkdirSync(dir);
  const tar = join(scratch, `${i}.tar`);
  execFileSync("git", ["--git-dir", path, "archive", "--format=tar", "-o", tar, "HEAD"]);
  execFileSync("tar", ["-xf", tar, "-C", dir]);
  const revision = execFileSync("git", ["--git-dir", path, "log", "-1", "--format=%h %cs", "HEAD"], { encoding: "utf8" }).trim();
  return { name, dir, revision };
}

/** The template folder a config file belongs to, if it is in one. */
function templateOf(f: string): string | undefined {
  const d = dirname(f);
  const t = basename(f) === ".devcontainer.json" ? d : basename(d) === ".devcontainer" && basename(f) === "devcontainer.json" ? dirname(d) : undefined;
  return t !== undefined && existsSync(join(t, "devcontainer-template.json")) ? t : undefined;
}

const refusedByStandard = new Set(
  Object.entries(MANIFEST_FIELD_SCOPE)
    .filter(([, s]) => s.class === "refused")
    .map(([k]) => k),
);

type Outcome = { ok: true } | { ok: false; why: string };

function ingest(model: JsonModel): Outcome {
  try {
    ingestDevcontainer(model);
    return { ok: true };
  } catch (e) {
    if (!isCairnError(e)) throw e;
    const issues = e.issues.length > 0 ? e.issues : [{ path: e.path ?? "", code: e.code, message: e.message }];
    return { ok: false, why: issues.map((i) => `${i.path} ${i.message}`).join("; ") };
  }
}

interface Row {
  name: string;
  revision: string;
  files: number;
  parsed: number;
  templates: number;
  stored: number;
  applied: number;
  allowed: number;
  strict: number;
}
const rows: Row[] = [];
const reasons = new Map<string, number>();

sources.forEach((arg, i) => {
  const src = open(arg, i);
  const row: Row = { name: src.name, revision: src.revision, files: 0, parsed: 0, templates: 0, stored: 0, applied: 0, allowed: 0, strict: 0 };
  for (const f of files(src.dir)) {
    row.files++;
    const shown = `${src.name}:${relative(src.dir, f)}`;
    let model: JsonModel;
    try {
      model = readManifestInput(f);
    } catch (e) {
      if (list) console.log(`unparsable ${shown}: ${isCairnError(e) ? e.code : String(e)}`);
      continue;
    }
    row.parsed++;
    const asStored = ingest(model);
    if (asStored.ok) row.stored++;
    let applied = asStored;
    let appliedModel = model;
    let appliedText: string | undefined;
    const t = templateOf(f);
    if (t !== undefined) {
      row.templates++;
      try {
        const r = applyTemplate(t);
        appliedText = r.text;
        appliedModel = parseInputText(r.text, shown);
        applied = ingest(appliedModel);
      } catch (e) {
        if (!isCairnError(e)) throw e;
        applied = { ok: false, why: `apply-template: ${e.code} ${e.message}` };
      }
    }
    if (applied.ok) row.applied++;
    const standardRefuses = isJsonObject(appliedModel) && Object.keys(appliedModel).some((k) => refusedByStandard.has(k));
    if (!standardRefuses) row.allowed++;
    const strict = standardIngest(appliedText ?? readFileSync(f, "utf8")).ok;
    if (strict) row.strict++;
    if (strict && !applied.ok)
      reasons.set(`(the strict standard accepts it) ${applied.why}`, (reasons.get(`(the strict standard accepts it) ${applied.why}`) ?? 0) + 1);
    if (list)
      console.log(
        `${applied.ok ? "accepted" : "refused "}  ${shown}${t ? " (template applied)" : ""}${applied.ok ? "" : `${standardRefuses ? " (standard)" : ""}: ${applied.why}`}`,
      );
    if (!applied.ok && !standardRefuses) reasons.set(applied.why, (reasons.get(applied.why) ?? 0) + 1);
  }
  rows.push(row);
});
rmSync(scratch, { recursive: true, force: true });

const cell = (n: number, of: number): string => `${n} (${((100 * n) / Math.max(of, 1)).toFixed(1)}%)`;
const total: Row = rows.reduce(
  (a, r) => ({
    ...a,
    files: a.files + r.files,
    parsed: a.parsed + r.parsed,
    templates: a.templates + r.templates,
    stored: a.stored + r.stored,
    applied: a.applied + r.applied,
    allowed: a.allowed + r.allowed,
    strict: a.strict + r.strict,
  }),
  { name: "all", revision: "", files: 0, parsed: 0, templates: 0, stored: 0, applied: 0, allowed: 0, strict: 0 },
);
console.log("| repository | revision | files | templates | accepted as stored | accepted, templates applied | standard allows | standard, strictly |");
console.log("|---|---|---|---|---|---|---|---|");
for (const r of [...rows, total]) {
  console.log(
    `| ${r.name} | ${r.revision} | ${r.files} | ${r.templates} | ${cell(r.stored, r.files)} | ${cell(r.applied, r.files)} | ${cell(r.allowed, r.files)} | ${cell(r.strict, r.files)} |`,
  );
}
if (reasons.size > 0) {
  console.log("\nrefused although the standard allows them (templates applied; message: count):");
  for (const [m, n] of [...reasons].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))) console.log(`  ${n}  ${m}`);
}
