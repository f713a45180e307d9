import type { Command } from "commander";
import type { Context } from "../context.ts";
import { registerManifestDiff } from "./manifest-diff.ts";
import { registerManifestIngest } from "./manifest-ingest.ts";
import { registerManifestResumeCheck } from "./manifest-resume-check.ts";
import { registerManifestVerify } from "./manifest-verify.ts";
import { registerManifestPin } from "./manifest-pin.ts";
import { registerManifestApplyTemplate } from "./manifest-apply-template.ts";
import { registerManifestShow } from "./manifest-show.ts";

/** `cairn manifest ingest|verify|diff|resume-check|pin|show|apply-template`: environment manifests from devcontainer.json. */
export function registerManifest(program: Command, ctx: Context): void {
  const manifest = program.command("manifest").description("environment manifests: devcontainer.json → signed, content-addressed identity");
  registerManifestIngest(manifest, ctx);
  registerManifestVerify(manifest, ctx);
  registerManifestDiff(manifest, ctx);
  registerManifestResumeCheck(manifest, ctx);
  registerManifestPin(manifest, ctx);
  registerManifestApplyTemplate(manifest, ctx);
  registerManifestShow(manifest, ctx);
}
