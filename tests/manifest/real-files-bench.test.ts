// bench/manifest/real-files.ts (issue 33, item 5) on a corpus built here: a
// template as stored and applied, a plain file, a file with a field the
// standard refuses, one with a field only cairn's profile accepts; once as a
// directory, once as a git repository exported from HEAD. The real figures
// are in bench/manifest/README.md.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PROJECT_ROOT } from "../helpers/vectors.ts";

const IMG = `debian@sha256:${"1".repeat(64)}`;
const corpus = mkdtempSync(join(tmpdir(), "cairn-real-files-test-"));
const put = (rel: string, text: string): void => {
  mkdirSync(join(corpus, rel, ".."), { recursive: true });
  writeFileSync(join(corpus, rel), text);
};
put("src/t/devcontainer-template.json", JSON.stringify({ id: "t", options: { v: { type: "string", proposals: ["12"], default: "12" } } }));
put("src/t/.devcontainer/devcontainer.json", `{ "image": "debian:\${templateOption:v}" }`);
put("plain/.devcontainer/devcontainer.json", `{ "image": "${IMG}", "name": "plain" }`);
put("build/.devcontainer/devcontainer.json", `{ "build": { "dockerfile": "Dockerfile" } }`);
put("profile/.devcontainer.json", `{ "image": "${IMG}", "remoteEnv": { "A": "b" } }`);
put("not-a-config/devcontainer-template.json", "{}");

function run(...sources: string[]): string[] {
  const out = execFileSync(process.execPath, ["--import", "tsx", join(PROJECT_ROOT, "bench/manifest/real-files.ts"), ...sources], {
    cwd: PROJECT_ROOT,
    encoding: "utf8",
  });
  return out.split("\n").filter((l) => l.startsWith("| "));
}

test("real-files reports per repository: as stored, templates applied by apply-template, the standard's ceiling, the strict standard", () => {
  const rows = run(`corpus=${corpus}`);
  assert.equal(
    rows[0],
    "| repository | revision | files | templates | accepted as stored | accepted, templates applied | standard allows | standard, strictly |",
  );
  // 4 files; 1 template; as stored: plain and profile; applied: + the template; the standard allows all but build; strictly: plain and the template
  assert.equal(rows[1], "| corpus | (directory) | 4 | 1 | 2 (50.0%) | 3 (75.0%) | 3 (75.0%) | 2 (50.0%) |");
});

test("a git repository is read from its HEAD tree, labelled by name, with its revision", () => {
  execFileSync("git", ["init", "-q", corpus]);
  execFileSync("git", ["-C", corpus, "add", "."]);
  execFileSync("git", ["-C", corpus, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "corpus"]);
  put("late/.devcontainer.json", `{ "image": "${IMG}" }`); // not committed: not in HEAD
  const rows = run(`git=${join(corpus, ".git")}`);
  assert.match(rows[1]!, /^\| git \| [0-9a-f]{7,} \d{4}-\d{2}-\d{2} \| 4 \| 1 \| 2 \(50\.0%\) \| 3 \(75\.0%\) \|/);
  // control: the directory itself sees the uncommitted file
  assert.match(run(`dir=${corpus}`)[1]!, /^\| dir \| \(directory\) \| 5 \|/);
});
