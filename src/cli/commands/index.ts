import type { Command } from "commander";
import type { Context } from "../main.ts";
import { registerKeygen } from "./keygen.ts";
import { registerManifest } from "./manifest.ts";
import { registerWorkload } from "./workload.ts";

/** Every command, in help order. Add one line per command file. */
export const COMMANDS: ReadonlyArray<(program: Command, ctx: Context) => void> = [registerKeygen, registerManifest, registerWorkload];
