/**
 * The share of real devcontainer.json files cairn gives an identity to, next
 * to the share the standard's own refusals allow. Input: a directory, read
 * recursively; every file whose name ends in `devcontainer.json` is one input. The files are not part of the repository: the numbers in
 * docs/manifest.md come from the devcontainer.json files of the public
 * repositories devcontainers/templates and devcontainers/images (MIT), copied
 * into one folder.
 *
 *   node --import tsx bench/manifest/real-files.ts DIR [--list] [--apply-template-defaults]
 *
 * With --apply-template-defaults, a file in `<t>/.devcontainer/` next to a
 * `<t>/devcontainer-template.json` (the devcontainers/templates layout) is
 * first applied with each option's default, as `devcontainer templates apply`
 * does (textual replacement of `${templateOption:name}`): the file a user of
 * that template actually has. Without it, templates are measured as stored.
 *
 * "Standard allows" counts the files that hold none of the constructs the
 * standard itself refuses (the `refused` class of FIELD_SCOPE: image builds,
 * Compose, lifecycle commands, sandbox-widening engine flags). A file that
 * fails to parse as JSONC is counted in neither share.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, relative } from "node:path";
import { isCairnError, isJsonObject } from "../../src/core/index.ts";
import { ingestDevcontainer, MANIFEST_FIELD_SCOPE, readManifestInput } from "../../src/manifest/index.ts";

function files(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...files(p));
    else if (name.endsWith("devcontainer.json")) out.push(p);
  }
  return out;
}

const dir = process.argv[2];
if (dir === undefined) {
  console.error("usage: real-files.ts DIR [--list]");
  process.exit(2);
}
const list = process.argv.includes("--list");
const applyDefaults = process.argv.includes("--apply-template-defaults");
const scratch = mkdtempSync(join(tmpdir(), "cairn-real-files-"));

/** The file as a template user has it: `${templateOption:x}` replaced by x's default. */
function applied(f: string): string {
  const template = join(dirname(f), "..", "devcontainer-template.json");
  if (!applyDefaults || basename(dirname(f)) !== ".devcontainer" || !existsSync(template)) return f;
  const options = (JSON.parse(readFileSync(template, "utf8")) as { options?: { [k: string]: { default?: unknown } } }).options ?? {};
  const text = readFileSync(f, "utf8").replace(/\$\{templateOption:([^}]*)\}/g, (m, name: string) => {
    const d = options[name.trim()]?.default;
    return d === undefined ? m : String(d);
  });
  const out = join(scratch, `${total}.json`);
  writeFileSync(out, text);
  return out;
}
const refusedByStandard = new Set(
  Object.entries(MANIFEST_FIELD_SCOPE)
    .filter(([, s]) => s.class === "refused")
    .map(([k]) => k),
);
let total = 0;
let accepted = 0;
let standardAllows = 0;
const reasons = new Map<string, number>();
for (const f of files(dir)) {
  total++;
  let model: unknown;
  try {
    model = readManifestInput(applied(f));
  } catch (e) {
    if (list) console.log(`unparsable ${relative(dir, f)}: ${isCairnError(e) ? e.code : String(e)}`);
    continue;
  }
  const standardRefuses = isJsonObject(model as never) && Object.keys(model as object).some((k) => refusedByStandard.has(k));
  if (!standardRefuses) standardAllows++;
  try {
    ingestDevcontainer(model);
    accepted++;
    if (list) console.log(`accepted  ${relative(dir, f)}`);
  } catch (e) {
    if (!isCairnError(e)) throw e;
    const issues = e.issues.length > 0 ? e.issues : [{ path: e.path ?? "", code: e.code, message: e.message }];
    if (list) console.log(`refused   ${relative(dir, f)}${standardRefuses ? " (standard)" : ""}: ${issues.map((i) => `${i.path} ${i.message}`).join("; ")}`);
    if (!standardRefuses) for (const i of issues) reasons.set(i.message, (reasons.get(i.message) ?? 0) + 1);
  }
}
rmSync(scratch, { recursive: true, force: true });
const pct = (n: number): string => `${((100 * n) / Math.max(total, 1)).toFixed(1)}%`;
console.log(
  `files ${total}; cairn gives an identity to ${accepted} (${pct(accepted)}); the standard's own refusals allow ${standardAllows} (${pct(standardAllows)})`,
);
if (reasons.size > 0) {
  console.log("refusals beyond the standard's own (message: count):");
  for (const [m, n] of [...reasons].sort((a, b) => b[1] - a[1])) console.log(`  ${n}  ${m}`);
}
