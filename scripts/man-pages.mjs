// Writes the man pages (dist/man/cairn.1 and one cairn-<command>.1 per
// top-level command) from the compiled command definitions: the program is
// built with every command loaded, read into the command tree and rendered
// by dist/cli/man-pages.js (src/cli/man-pages.ts says what each page holds).
// Run by `npm run build` after tsc; package.json "man" lists the pages, and
// tests/cli/man-pages.test.ts checks that list against what this writes.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildProgram } from "../dist/cli/program.js";
import { commandTree } from "../dist/cli/command-tree.js";
import { manPages } from "../dist/cli/man-pages.js";
import { CAIRN_VERSION } from "../dist/cli/cairn-version.js";

const silent = { out: () => {}, err: () => {}, tty: false };
const program = await buildProgram({ io: silent, env: {}, cwd: "/", json: false });
const out = join("dist", "man");
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const pages = manPages(commandTree(program), CAIRN_VERSION);
for (const [name, text] of pages) writeFileSync(join(out, name), text);
process.stderr.write(`wrote ${pages.size} man pages to ${out}\n`);
