// Bundles the compiled CLI (dist/cli/main.js and every module it imports,
// its runtime dependencies included) into dist/cli/bundle.js and its
// chunks, which bin/cairn.js runs. Why: a command loaded ~110 modules one by one,
// and resolving, reading and compiling them was most of a short command's
// time (docs/architecture.md, "The CLI bundle"). The library's own entry
// points (package.json "exports") stay the separate modules of dist/.
//
// What stays outside the bundle, loaded at run time as files of dist/ or
// node_modules: the inflate worker and the network responder (started as
// a thread and a process of their own, core/code-path.ts finds them), the
// vendored OCI schemas, and the packages loaded lazily through
// createRequire (yaml, ajv-draft-04), which commands that need none never
// load. Run by `npm run build` after tsc; it reads dist/, not src/, so the
// bundle is the very code tsc emitted, joined.
//
// The bundle is split (esbuild's `splitting`): dist/cli/bundle.js holds what
// every command needs (main, the program, commander), and each command's
// library is in shared chunks, dist/cli/bundle-<hash>.js, that a command
// line loads when it names that command (program.ts imports a command's file
// only then). One file of the whole CLI (1.5 MB) was compiled at every
// start; `cairn pull` now loads about half of it (issue 34). The chunks
// sit beside the bundle, one folder below dist/, so core/code-path.ts
// finds files from them as it does from the bundle.
import { build } from "esbuild";

await build({
  entryPoints: { bundle: "dist/cli/main.js" },
  outdir: "dist/cli",
  entryNames: "[name]",
  chunkNames: "bundle-[hash]",
  splitting: true,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  // jsonc-parser's UMD build requires its parts by computed names, which a bundler cannot follow: take its ESM build
  mainFields: ["module", "main"],
  // bundled CommonJS (commander, tar-stream) calls require() for node's own modules: give the bundle one
  banner: { js: 'import { createRequire as cairnBundleRequire } from "node:module";\nconst require = cairnBundleRequire(import.meta.url);' },
  legalComments: "eof",
  logLevel: "warning",
});
