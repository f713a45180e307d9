import type { Command } from "commander";
import type { Context } from "../context.ts";
import { registerWorkloadAssemble } from "./workload-assemble.ts";
import { registerWorkloadCheck } from "./workload-check.ts";
import { registerWorkloadShow } from "./workload-show.ts";
import { registerWorkloadVerify } from "./workload-verify.ts";

/** `cairn workload assemble|check|verify|show`: static executables and OCI layouts into canonical, locked workloads. */
export function registerWorkload(program: Command, ctx: Context): void {
  const workload = program.command("workload").description("workloads: a static executable or an OCI image layout → canonical, content-addressed, locked");
  registerWorkloadAssemble(workload, ctx);
  registerWorkloadCheck(workload, ctx);
  registerWorkloadVerify(workload, ctx);
  registerWorkloadShow(workload, ctx);
}
