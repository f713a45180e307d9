import type { Command } from "commander";
import { CairnError } from "../../core/index.ts";
import { lockfileCaveats, strataEnvironmentId, verifyLock, verifyLockContents } from "../../strata/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";
import { clock, lockVerifyOptions, probeBaseFlag, withLockVerifyFlags, type LockVerifyFlags } from "../flags.ts";
import { remoteFlags } from "../remote-flags.ts";

const POLICY_TEXT: Readonly<Record<string, string>> = {
  signed: "signed (cairn checked every layer and formation against a trusted key at resolution)",
  "unsigned-offline": "unsigned-offline (some layers or formations were accepted unsigned)",
  "attestation-references-present":
    "attestation-references-present (Strata's claim that every layer names a bundle and a Rekor entry; cairn does not check Rekor offline)",
  unrecorded: "unrecorded (no cairn records; each layer's signed manifest was checked in the registry when --trust was given)",
};

export function registerLockVerify(lock: Command, ctx: Context): void {
  const cmd = lock
    .command("verify")
    .description(
      "verify a signed lockfile offline: signature, Validate, freshness, policy, and every layer's bytes in the registry (exit 1 at the first failure)",
    )
    .argument("<lock>", "lockfile (its signature is LOCK.dsse.json)");
  withLockVerifyFlags(remoteFlags(cmd), true)
    .option("--json", "print the result as JSON")
    .action(async (path: string, opts: LockVerifyFlags & { json?: boolean }) => {
      const now = clock(ctx.env);
      const probed = await probeBaseFlag(ctx, opts.base, now);
      const verify = await lockVerifyOptions(ctx, opts, now);
      const report = await verifyLock(path, { ...verify, ...(probed !== undefined ? { probedBase: probed } : {}) });
      if (opts.contents && verify.registries.length === 0) throw new CairnError("USAGE", "--contents needs --registry");
      const contentsChecked = opts.contents ? await verifyLockContents(report.lock, verify.registries) : null;
      const caveats = lockfileCaveats(report.lock);
      const strata = strataEnvironmentId(report.lock.spec);
      if (opts.json) {
        printJson(ctx.io, "cairn.cli.lock-verify/1", {
          verified: true,
          strata_environment_id: strata,
          environment_id: report.environmentId,
          signed_by: report.signature.keyid,
          resolved_at: report.lock.resolved_at,
          age: report.freshness.age,
          age_seconds: Math.floor(report.freshness.ageMs / 1000),
          future_dated: report.freshness.future,
          verification_policy: report.verificationPolicy,
          layers_checked: report.layersChecked,
          contents_checked: contentsChecked,
          base_checked: report.baseChecked,
          layer_signatures_checked: opts.trust.length > 0 && (report.layersChecked !== null || report.embeddedSignaturesChecked !== null),
          embedded_signatures_checked: report.embeddedSignaturesChecked,
          caveats,
        });
        return;
      }
      const lines = [
        `verified ${path}`,
        `environment ${strata}  (EnvironmentID, Strata)`,
        `content     ${report.environmentId}  (content identity, cairn)`,
        `signed by   ${report.signature.keyid}`,
        `resolved    ${report.lock.resolved_at} (${report.freshness.future ? `FUTURE-DATED: ${report.freshness.age}` : `${report.freshness.age} old`})`,
        `policy      ${POLICY_TEXT[report.verificationPolicy] ?? report.verificationPolicy}`,
        `base        ${report.lock.base.name} ${report.lock.base.arch} (${report.baseChecked ? "re-probed: digest matches" : `${report.lock.base.source === "declared" ? "declared" : `probed from ${report.lock.base.source}`} at resolution; not re-probed (give --base to check it)`})`,
        `layers      ${report.layersChecked === null ? `${report.lock.layers.length}, bytes NOT checked (give --registry to check them)${report.embeddedSignaturesChecked !== null ? `; ${report.embeddedSignaturesChecked} signature(s) verified on the embedded manifests` : ""}` : `${report.layersChecked} checked: manifests and blob bytes match${opts.trust.length ? ", layer signatures verified" : ""}${contentsChecked !== null ? ", unpacked contents match their manifests" : ""}`}`,
        ...caveats.map((c) => `  ! ${c}`),
      ];
      ctx.io.out(lines.join("\n"));
    });
}
