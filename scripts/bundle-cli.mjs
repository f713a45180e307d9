// Bundles the compiled CLI (dist/cli/main.js and every module it imports,
// its runtime dependencies included) into one file, dist/cli/bundle.js,
// which bin/cairn.js runs. Why: a command loaded ~110 modules one by one,
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
import { build } from "esbuild";

await build({
  entryPoints: ["dist/cli/main.js"],
  outfile: "dist/cli/bundle.js",
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
