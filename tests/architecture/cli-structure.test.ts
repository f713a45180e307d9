/**
 * The CLI only parses and prints. Read from the sources' imports (the same
 * reader as layers.test.ts):
 *  - nothing under src/ imports cli/main.ts (bin/ and the tests that run the
 *    CLI do); commands get Context from cli/context.ts;
 *  - a file under cli/commands/ registers a command, and imports no other
 *    command file except a noun importing its own verbs (lock.ts → lock-*.ts).
 * File-level cycles and shared basenames are checked for all of src/ by
 * layers.test.ts. Each rule also runs on a planted violation (the control).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readSources, type SourceFile } from "./source-graph.ts";

const COMMANDS = "cli/commands/";

function mainImporters(files: readonly SourceFile[]): string[] {
  return files.filter((f) => f.imports.some((i) => i.to === "cli/main.ts")).map((f) => f.rel);
}

const isCommand = (f: SourceFile): boolean => /^export function register[A-Z]\w*\(/m.test(f.text);

function nonCommands(files: readonly SourceFile[]): string[] {
  return files.filter((f) => f.rel.startsWith(COMMANDS) && !isCommand(f)).map((f) => f.rel);
}

function crossCommandImports(files: readonly SourceFile[]): string[] {
  const byRel = new Map(files.map((f) => [f.rel, f]));
  const out: string[] = [];
  for (const f of files) {
    if (!f.rel.startsWith(COMMANDS)) continue;
    const noun = f.rel.slice(COMMANDS.length, -".ts".length);
    for (const i of f.imports) {
      if (!i.to.startsWith(COMMANDS) || i.to.slice(COMMANDS.length).includes("/")) continue;
      const verb = i.to.slice(COMMANDS.length, -".ts".length);
      const target = byRel.get(i.to);
      if (verb.startsWith(`${noun}-`) && target !== undefined && isCommand(target)) continue; // a noun registers its verbs
      out.push(`${f.rel} -> ${i.to}`);
    }
  }
  return out;
}

const sources = readSources();

test("nothing under src/ imports cli/main.ts; commands take Context from cli/context.ts", () => {
  assert.ok(sources.some((f) => f.rel === "cli/context.ts"));
  assert.deepEqual(mainImporters(sources), []);
});

test("cli/commands/ holds command files only, and a command imports no other command except a noun its own verbs", () => {
  assert.ok(sources.filter(isCommand).length >= 20, "the command files were read");
  assert.deepEqual(nonCommands(sources), [], "move non-command helpers out of commands/ (cli/flags.ts, or the library)");
  assert.deepEqual(crossCommandImports(sources), [], "share through cli/flags.ts or the library, not another command");
});

test("control: each rule fails on a planted violation", () => {
  const cmd = (rel: string, imports: string[]): SourceFile => ({
    rel,
    text: "export function registerX(program) {}\n",
    imports: imports.map((to) => ({ to, typeOnly: false, line: 1 })),
  });
  const planted: SourceFile[] = [
    cmd("cli/commands/lock.ts", ["cli/commands/lock-verify.ts"]),
    cmd("cli/commands/lock-verify.ts", ["cli/commands/resolve.ts", "cli/main.ts"]),
    cmd("cli/commands/resolve.ts", []),
    { rel: "cli/commands/helpers.ts", text: "export const x = 1;\n", imports: [] },
  ];
  assert.deepEqual(mainImporters(planted), ["cli/commands/lock-verify.ts"]);
  assert.deepEqual(nonCommands(planted), ["cli/commands/helpers.ts"]);
  assert.deepEqual(crossCommandImports(planted), ["cli/commands/lock-verify.ts -> cli/commands/resolve.ts"]);
});
