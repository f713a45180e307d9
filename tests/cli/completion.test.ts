// `cairn completion bash|zsh|fish` (issue 36, item 5): each script is run by
// its own shell. bash: sourced from `cairn completion bash` (the built
// bin/cairn.js, as a user types it), `complete -p cairn` names the function,
// and completion is simulated the way bash calls it (COMP_WORDS/COMP_CWORD,
// then the function, then COMPREPLY). fish: the real completion engine
// (`complete -C "cairn ru"`). zsh: parsed with `zsh -n`, then the function run
// with the completion system's builtins (compadd, _describe, _files) replaced
// by functions that print what they are given, since zsh's completion widgets
// only run inside an interactive line editor. Controls: a word that is no
// command offers nothing; an unknown shell is a usage error.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after } from "node:test";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { runCli } from "../helpers/cli.ts";
import { needs } from "../helpers/prerequisites.ts";
import { COMMANDS } from "../../src/cli/program.ts";

const dir = mkdtempSync(join(tmpdir(), "cairn-completion-"));
after(() => rmSync(dir, { recursive: true, force: true }));
// a directory whose files a path argument completes to (a name with a space too)
const files = join(dir, "files");
mkdirSync(files);
writeFileSync(join(files, "env one.lock"), "");
writeFileSync(join(files, "env-two.lock"), "");

const has = (tool: string): boolean => spawnSync("sh", ["-c", `command -v ${tool}`]).status === 0;

async function script(shell: string): Promise<string> {
  const r = await runCli(["completion", shell]);
  assert.equal(r.code, 0, r.stderr);
  const path = join(dir, `cairn.${shell}`);
  writeFileSync(path, r.stdout);
  return path;
}

/** What the bash script offers for `words` (the last one being completed), one candidate a line. */
function bashComplete(scriptPath: string, words: readonly string[]): string[] {
  const driver = `source ${JSON.stringify(scriptPath)}
COMP_WORDS=(${words.map((w) => `'${w.replaceAll("'", `'\\''`)}'`).join(" ")})
COMP_CWORD=${words.length - 1}
_cairn
printf '%s\\n' "\${COMPREPLY[@]}"`;
  const r = spawnSync("bash", ["--norc", "--noprofile", "-c", driver], { encoding: "utf8", timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.split("\n").filter((l) => l !== "");
}

test("bash: source <(cairn completion bash) registers the completion function", { timeout: 120_000 }, () => {
  assert.ok(existsSync(join(PROJECT_ROOT, "dist", "cli", "bundle.js")), "dist/ is built (npm run build): this test runs bin/cairn.js");
  const bin = join(dir, "bin");
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, "cairn"), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(join(PROJECT_ROOT, "bin", "cairn.js"))} "$@"\n`);
  chmodSync(join(bin, "cairn"), 0o755);
  const r = spawnSync("bash", ["--norc", "--noprofile", "-c", "source <(cairn completion bash); complete -p cairn"], {
    encoding: "utf8",
    timeout: 60_000,
    env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
  });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), "complete -F _cairn cairn");
});

test("bash: commands, subcommands, a subcommand's options, choices and files complete", async () => {
  const s = await script("bash");
  const top = bashComplete(s, ["cairn", ""]).sort();
  assert.deepEqual(top, COMMANDS.map((c) => c.name).sort(), "every top-level command (the whole tree was loaded)");
  assert.deepEqual(bashComplete(s, ["cairn", "ru"]), ["run", "runs"]);
  assert.deepEqual(bashComplete(s, ["cairn", "runs", ""]), ["list", "show"]);
  const show = bashComplete(s, ["cairn", "runs", "show", "--"]);
  for (const o of ["--runs", "--json", "--help"]) assert.ok(show.includes(o), `${o} of runs show in ${show.join(" ")}`);
  assert.deepEqual(bashComplete(s, ["cairn", "lock", "diff", "--j"]), ["--json"]);
  assert.deepEqual(bashComplete(s, ["cairn", "completion", ""]), ["bash", "zsh", "fish"]);
  // a path argument and an option's value complete to files (after an option value was skipped too)
  assert.deepEqual(bashComplete(s, ["cairn", "lock", "diff", `${files}/env`]), [join(files, "env one.lock"), join(files, "env-two.lock")]);
  assert.deepEqual(bashComplete(s, ["cairn", "lock", "export", "--out", `${files}/env-`]), [join(files, "env-two.lock")]);
  assert.deepEqual(bashComplete(s, ["cairn", "runs", "show", "--runs", files, "--j"]), ["--json"]);
  // control: a word that is no command offers nothing, and options belong to their command
  assert.deepEqual(bashComplete(s, ["cairn", "zz"]), []);
  assert.ok(!bashComplete(s, ["cairn", "zz", ""]).includes("lock"), "after a word that is no command, no command is offered");
  assert.deepEqual(
    bashComplete(s, ["cairn", "bundle", `${files}/env-two.lock`, `${files}/env-`]),
    [join(files, "env-two.lock")],
    "after an argument, files, not subcommands",
  );
  assert.ok(!bashComplete(s, ["cairn", "lock", "diff", "--"]).includes("--runs"), "lock diff has no --runs");
});

test("fish: the script parses and fish's own completion offers commands, options and choices", {
  skip: needs(has("fish") ? undefined : "fish (apt-get install fish)"),
}, async () => {
  const s = await script("fish");
  const parse = spawnSync("fish", ["--no-config", "-n", s], { encoding: "utf8" });
  assert.equal(parse.status, 0, parse.stderr);
  const complete = (line: string): string[] => {
    const r = spawnSync("fish", ["--no-config", "-c", `source ${s}; complete -C ${JSON.stringify(line)}`], {
      encoding: "utf8",
      timeout: 60_000,
      env: { ...process.env, HOME: dir, XDG_CONFIG_HOME: dir, XDG_DATA_HOME: dir },
    });
    assert.equal(r.status, 0, r.stderr);
    return r.stdout
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => l.split("\t")[0]!);
  };
  assert.deepEqual(complete("cairn ru").sort(), ["run", "runs"]);
  const show = complete("cairn runs show --");
  for (const o of ["--runs", "--json"]) assert.ok(show.includes(o), `${o} in ${show.join(" ")}`);
  assert.deepEqual(complete("cairn completion ").sort(), ["bash", "fish", "zsh"]);
  assert.deepEqual(complete(`cairn lock diff ${files}/env-`), [join(files, "env-two.lock")]);
  assert.deepEqual(complete("cairn zz"), [], "control: no command");
  assert.ok(!complete(`cairn bundle ${files}/env-two.lock `).includes("push"), "after an argument, no subcommand");
  assert.ok(complete("cairn bundle ").includes("push"), "control: before it, the subcommand");
});

test("zsh: the script parses and its function offers commands, options, choices and files", {
  skip: needs(has("zsh") ? undefined : "zsh (apt-get install zsh)"),
}, async () => {
  const s = await script("zsh");
  const parse = spawnSync("zsh", ["-n", s], { encoding: "utf8" });
  assert.equal(parse.status, 0, parse.stderr);
  const complete = (words: readonly string[]): string[] => {
    const driver = `compdef() { print -r -- "compdef $*" }
_describe() { local n; for n in "\${(@P)4}"; do print -r -- "\${n%%:*}"; done }
compadd() { print -rl -- "\${(@P)2}" }
_files() { print -r -- "<files>" }
source ${s}
words=(${words.map((w) => `'${w}'`).join(" ")})
CURRENT=${words.length}
_cairn`;
    const r = spawnSync("zsh", ["-f", "-c", driver], { encoding: "utf8", timeout: 60_000 });
    assert.equal(r.status, 0, r.stderr);
    const lines = r.stdout.split("\n").filter((l) => l !== "");
    assert.equal(lines[0], "compdef _cairn cairn", "sourced, the script registers itself");
    return lines.slice(1);
  };
  assert.deepEqual(
    complete(["cairn", ""]),
    COMMANDS.map((c) => c.name),
  );
  assert.deepEqual(complete(["cairn", "runs", ""]), ["list", "show"]);
  const show = complete(["cairn", "runs", "show", "--"]);
  for (const o of ["--runs", "--json"]) assert.ok(show.includes(o), `${o} in ${show.join(" ")}`);
  assert.deepEqual(complete(["cairn", "completion", ""]), ["bash", "zsh", "fish"]);
  assert.deepEqual(complete(["cairn", "lock", "export", "--out", ""]), ["<files>"]);
  assert.deepEqual(complete(["cairn", "runs", "show", "--runs", "x", "--j"]).includes("--json"), true);
  assert.deepEqual(complete(["cairn", "lock", "diff", "a", ""]), ["<files>"], "an argument is a path");
  assert.deepEqual(complete(["cairn", "zz", ""]), ["<files>"], "after a word that is no command, no command is offered");
});

test("control: an unknown shell is a usage error (exit 2) that names the choices", async () => {
  const r = await runCli(["completion", "tcsh"]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /bash, zsh, fish/);
  assert.equal(r.stdout, "");
});
