#!/usr/bin/env node
// The cairn command. It runs the compiled CLI as a bundle (dist/cli/bundle.js
// and its chunks beside it: dist/cli/main.js and every module it imports,
// joined by scripts/bundle-cli.mjs), which `npm ci` builds through the
// `prepare` script and the package ships: no TypeScript compiler runs at
// start, no module graph of ~110 files is resolved and read one by one, and
// a command loads only the chunks its library needs. Tests that call the
// CLI in-process use the sources.
import { readFileSync } from "node:fs";

const argv = process.argv.slice(2);
// `cairn --version` alone answers from package.json (the same file
// cli/cairn-version.ts reads) without loading the ~150 modules of every
// command: module loading, not compilation, is what a start costs now.
if (argv.length === 1 && (argv[0] === "--version" || argv[0] === "-V")) {
  process.stdout.write(`${JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).version}\n`);
} else {
  let main;
  let guardProcess;
  try {
    ({ main, guardProcess } = await import("../dist/cli/bundle.js"));
  } catch (error) {
    if (error?.code !== "ERR_MODULE_NOT_FOUND" || !String(error.message).includes("dist/cli/bundle.js")) throw error;
    process.stderr.write("cairn: the compiled CLI (dist/) is missing; run `npm run build` in the package directory\n");
    process.exit(3);
  }
  // Any exception that escapes a command becomes a coded error (exit 1, JSON under --json), never a stack trace.
  guardProcess(argv);
  process.exitCode = await main(argv);
}
