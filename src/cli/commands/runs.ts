import type { Command } from "commander";
import type { Context } from "../context.ts";
import { registerRunsList } from "./runs-list.ts";
import { registerRunsShow } from "./runs-show.ts";

/** `cairn runs list|show`: the recorded runs and what each is. */
export function registerRuns(program: Command, ctx: Context): void {
  const runs = program.command("runs").description("recorded runs: list them, describe one");
  registerRunsList(runs, ctx);
  registerRunsShow(runs, ctx);
}
