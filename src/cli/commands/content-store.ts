import type { Command } from "commander";
import type { Context } from "../context.ts";
import { registerStoreDu } from "./content-store-du.ts";
import { registerStoreGc } from "./content-store-gc.ts";

/** `cairn store gc|du`: what the content store holds, and removing what no kept lock needs. */
export function registerStore(program: Command, ctx: Context): void {
  const store = program.command("store").description("the content store: what uses the space, and garbage collection");
  registerStoreDu(store, ctx);
  registerStoreGc(store, ctx);
}
