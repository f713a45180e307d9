#!/usr/bin/env node
// The cairn command. It runs the TypeScript sources through tsx so the
// checkout is always what runs; the library build (dist/) is for importers.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../src/cli/main.ts");
process.exitCode = await main(process.argv.slice(2));
