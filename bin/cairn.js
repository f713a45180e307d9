#!/usr/bin/env node
// The cairn command. It runs the TypeScript sources through tsx so the
// checkout is always what runs; the library build (dist/) is for importers.
import { register } from "tsx/esm/api";

register();
const { main, guardProcess } = await import("../src/cli/main.ts");
guardProcess(process.argv.slice(2));
process.exitCode = await main(process.argv.slice(2));
