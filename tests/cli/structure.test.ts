/**
 * The CLI only parses and prints, and file names say which one. Read from the
 * sources' import lines:
 *  - nothing under src/ imports cli/main.ts (bin/ and the tests that run the
 *    CLI do); commands get Context from cli/context.ts;
 *  - a file under cli/commands/ registers a command, and imports no other
 *    command file except a noun importing its own verbs (lock.ts → lock-*.ts);
 * (File-level cycles and shared basenames are checked for all of src/ by
 * tests/architecture/layers.test.ts.)
 * Each allow-list entry says why; an entry that is no longer needed fails, so
 * the list only shrinks.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync, statSync } from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";
import { PROJECT_ROOT } from "../helpers/vectors.ts";

const SRC = join(PROJECT_ROOT, "src");
const CLI = join(SRC, "cli");
const COMMANDS = join(CLI, "commands");

/** Empty: every former entry (OCI base probing, `--base` handling, the tree files' basenames) moved out. */
const ALLOWED_MAIN_IMPORTERS: Record<string, string> = {};
const ALLOWED_NON_COMMANDS: Record<string, string> = {};
const ALLOWED_COMMAND_IMPORTS: Record<string, string> = {};

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...sourceFiles(p));
    else if (name.endsWith(".ts")) out.push(p);
  }
  return out.sort();
}

/** The files a source file imports or re-exports, resolved to absolute paths (relative specifiers only). */
function importsOf(file: string, text = readFileSync(file, "utf8")): string[] {
  const specs = [...text.matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s+"(\.{1,2}\/[^"]+)"|^\s*import\s+"(\.{1,2}\/[^"]+)"/gm)].map((m) => (m[1] ?? m[2])!);
  return specs.map((s) => resolve(dirname(file), s));
}

/** Every cycle's members (strongly connected components with more than one file, or a self-import). */
function cyclesOf(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(scc.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

function checkAllowList(name: string, allowed: Record<string, string>, used: ReadonlySet<string>): void {
  const stale = Object.keys(allowed).filter((k) => !used.has(k));
  assert.deepEqual(stale, [], `${name}: these entries are no longer needed; remove them`);
}

test("control: the helpers see imports and cycles", () => {
  assert.deepEqual(
    importsOf("/x/a.ts", 'import type { A } from "./b.ts";\nexport { c } from "../c.ts";\nimport "./d.ts";\nconst s = "from \\"./no.ts\\"";\n'),
    ["/x/b.ts", "/c.ts", "/x/d.ts"],
  );
  const g = new Map([
    ["a", ["b"]],
    ["b", ["c"]],
    ["c", ["a"]],
    ["d", ["a"]],
  ]);
  assert.deepEqual(cyclesOf(g), [["a", "b", "c"]]);
  assert.deepEqual(
    cyclesOf(
      new Map([
        ["a", ["b"]],
        ["b", []],
      ]),
    ),
    [],
  );
});

test("nothing under src/ imports cli/main.ts; commands take Context from cli/context.ts", () => {
  const main = join(CLI, "main.ts");
  const importers = sourceFiles(SRC)
    .filter((f) => importsOf(f).includes(main))
    .map((f) => relative(SRC, f));
  const used = new Set(importers.filter((f) => f in ALLOWED_MAIN_IMPORTERS));
  assert.deepEqual(
    importers.filter((f) => !used.has(f)),
    [],
  );
  checkAllowList("ALLOWED_MAIN_IMPORTERS", ALLOWED_MAIN_IMPORTERS, used);
});

test("cli/commands/ holds command files only, and a command imports no other command except a noun its own verbs", () => {
  const files = sourceFiles(COMMANDS);
  const isCommand = (f: string): boolean => /^export function register[A-Z]\w*\(/m.test(readFileSync(f, "utf8"));
  const nonCommands = files.filter((f) => !isCommand(f)).map((f) => relative(COMMANDS, f));
  const usedNon = new Set(nonCommands.filter((f) => f in ALLOWED_NON_COMMANDS));
  assert.deepEqual(
    nonCommands.filter((f) => !usedNon.has(f)),
    [],
    "move non-command helpers out of commands/ (cli/flags.ts, or the library)",
  );
  checkAllowList("ALLOWED_NON_COMMANDS", ALLOWED_NON_COMMANDS, usedNon);
  const cross: string[] = [];
  for (const f of files) {
    const noun = basename(f, ".ts");
    for (const t of importsOf(f)) {
      if (dirname(t) !== COMMANDS) continue;
      const verb = basename(t, ".ts");
      if (verb.startsWith(`${noun}-`) && isCommand(t)) continue; // a noun registers its verbs
      cross.push(`${basename(f)} -> ${basename(t)}`);
    }
  }
  const usedCross = new Set(cross.filter((c) => c in ALLOWED_COMMAND_IMPORTS));
  assert.deepEqual(
    cross.filter((c) => !usedCross.has(c)),
    [],
    "share through cli/flags.ts or the library, not another command",
  );
  checkAllowList("ALLOWED_COMMAND_IMPORTS", ALLOWED_COMMAND_IMPORTS, usedCross);
});
