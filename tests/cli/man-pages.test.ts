// Man pages generated from the command definitions at build time (issue 36,
// item 5): `npm run build` writes dist/man/cairn.1 and one
// cairn-<command>.1 per top-level command (scripts/man-pages.mjs). The pages
// are rendered by groff (`-man -Tutf8`, warnings on, none allowed) and every
// command and subcommand, and every option of each, must appear in the
// rendered text of its page; package.json "man" lists exactly the pages built,
// and `npm pack --dry-run` ships them. Control: a description that would be a
// roff request (`.so /etc/passwd`) or an escape is printed as text.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Command } from "commander";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { needs } from "../helpers/prerequisites.ts";
import { buildProgram } from "../../src/cli/program.ts";
import { allCommands, commandTree, type CommandNode } from "../../src/cli/command-tree.ts";
import { manPageName, manPages } from "../../src/cli/man-pages.ts";
import { CAIRN_VERSION } from "../../src/cli/cairn-version.ts";

const MAN = join(PROJECT_ROOT, "dist", "man");
const hasGroff = spawnSync("sh", ["-c", "command -v groff"]).status === 0;

const root = commandTree(await buildProgram({ io: { out: () => {}, err: () => {}, tty: false }, env: {}, cwd: "/", json: false }));

/** The page as a reader sees it: groff's text, with line-end hyphenation and adjustment undone. */
function render(page: string): string {
  const r = spawnSync("groff", ["-man", "-Tutf8", "-ww", "-rLL=200n", "-rHY=0", "-P", "-cbou"], { input: page, encoding: "utf8", timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, "", "groff warns about nothing");
  return r.stdout
    .replace(/\u2010\n\s*/g, "") // a hyphenated line end
    .replace(/\s+/g, " ");
}

test("npm run build wrote one page for the program and one per top-level command, the pages the sources generate", () => {
  assert.ok(existsSync(MAN), "dist/man is built (npm run build)");
  const built = readdirSync(MAN).sort();
  const generated = manPages(root, CAIRN_VERSION);
  assert.deepEqual(built, [...generated.keys()].sort());
  assert.deepEqual(built, ["cairn.1", ...root.commands.map(manPageName)].sort());
  for (const [name, text] of generated) assert.equal(readFileSync(join(MAN, name), "utf8"), text, `${name} is what the current definitions give`);
  const pkg = JSON.parse(readFileSync(join(PROJECT_ROOT, "package.json"), "utf8")) as { man: string[] };
  assert.deepEqual([...pkg.man].sort(), built.map((b) => `./dist/man/${b}`).sort(), 'package.json "man" lists every page');
});

test("every command, subcommand and option appears in its rendered page", { skip: needs(hasGroff ? undefined : "groff (apt-get install groff-base)") }, () => {
  const pages = manPages(root, CAIRN_VERSION);
  const rendered = new Map([...pages].map(([n, t]) => [n, render(t)]));
  const top = rendered.get("cairn.1")!;
  for (const c of root.commands) assert.ok(top.includes(`cairn-${c.name}(1)`), `cairn(1) lists ${c.name}`);
  let checked = 0;
  for (const c of root.commands) {
    const text = rendered.get(manPageName(c))!;
    for (const sub of allCommands(c)) {
      assert.ok(text.includes(sub.path.join(" ")), `${manPageName(c)} shows ${sub.path.join(" ")}`);
      for (const o of sub.options) assert.ok(text.includes(o.flags), `${manPageName(c)} shows ${o.flags} of ${sub.path.join(" ")}`);
      checked++;
    }
  }
  assert.ok(checked > 60, `control: ${checked} commands were checked`);
  assert.ok(rendered.get("cairn-lock.1")!.includes("cairn lock diff [options] <a> <b>"), "a subcommand's usage line");
});

test("the package ships the man pages (npm pack --dry-run)", { timeout: 180_000 }, () => {
  assert.ok(existsSync(join(MAN, "cairn.1")), "dist/man is built (npm run build)");
  const r = spawnSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
    cwd: PROJECT_ROOT,
    encoding: "utf8",
    timeout: 120_000,
    maxBuffer: 64 << 20,
  });
  assert.equal(r.status, 0, r.stderr);
  const [info] = JSON.parse(r.stdout) as Array<{ files: Array<{ path: string }> }>;
  const files = new Set(info!.files.map((f) => f.path));
  for (const page of readdirSync(MAN)) assert.ok(files.has(`dist/man/${page}`), page);
});

test("control: a description that reads as a roff request or escape is printed as text", {
  skip: needs(hasGroff ? undefined : "groff (apt-get install groff-base)"),
}, () => {
  const program = new Command("cairn").description("the program");
  program.command("probe").description(".so /etc/passwd").option("--x <v>", "'br back\\slash \\fB bold é").argument("<file>", ".TH arg");
  const pages = manPages(commandTree(program), "0");
  const text = render(pages.get("cairn-probe.1")!);
  assert.ok(text.includes(".so /etc/passwd"), text);
  assert.ok(text.includes("'br back\\slash \\fB bold é"), text);
  assert.ok(text.includes(".TH arg"), text);
  assert.ok(!text.includes("root:"), "nothing was included");
  // control: a plain description renders as itself, so the checks above can see text
  const plain = render(manPages(commandTree(new Command("cairn").description("plain words")), "0").get("cairn.1")!);
  assert.ok(plain.includes("plain words"));
});

test("every command node of the program is reachable from its page's tree (the tree is whole)", () => {
  const names = new Set(allCommands(root).map((c: CommandNode) => c.path.join(" ")));
  for (const must of ["cairn lock diff", "cairn runs show", "cairn completion", "cairn campaign run", "cairn store gc"]) assert.ok(names.has(must), must);
});
