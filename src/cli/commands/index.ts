import type { Command } from "commander";
import type { Context } from "../main.ts";
import { registerKeygen } from "./keygen.ts";
import { registerManifest } from "./manifest.ts";
import { registerWorkload } from "./workload.ts";
import { registerSetup } from "./setup.ts";
import { registerRun } from "./run.ts";
import { registerReplay } from "./replay.ts";
import { registerProfile } from "./profile.ts";
import { registerResolve } from "./resolve.ts";
import { registerLock } from "./lock.ts";
import { registerLayer } from "./layer.ts";
import { registerFormation } from "./formation.ts";
import { registerSearch } from "./search.ts";

/** Every command, in help order. Add one line per command file. */
export const COMMANDS: ReadonlyArray<(program: Command, ctx: Context) => void> = [registerKeygen, registerManifest, registerWorkload, registerProfile, registerResolve, registerLock, registerLayer, registerFormation, registerSearch, registerSetup, registerRun, registerReplay];
