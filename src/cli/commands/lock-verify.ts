import type { Command } from "commander";
import { CairnError, readVerifyingKey } from "../../core/index.ts";
import { lockfileCaveats, openRegistries, parseMaxAge, readTrust, verifyLock, verifyLockContents } from "../../strata/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";
import { clock, collect, probeBaseFlag } from "../flags.ts";

interface VerifyOpts {
  pub: string;
  registry: string[];
  trust: string[];
  maxAge?: string;
  allowUnsignedOffline?: boolean;
  base?: string;
  contents?: boolean;
  json?: boolean;
}

export function registerLockVerify(lock: Command, ctx: Context): void {
  lock
    .command("verify")
    .description(
      "verify a signed lockfile offline: signature, Validate, freshness, policy, and every layer's bytes in the registry (exit 1 at the first failure)",
    )
    .argument("<lock>", "lockfile (its signature is LOCK.dsse.json)")
    .requiredOption("--pub <key>", "the Ed25519 public key the lockfile must be signed by")
    .option("--registry <dir>", "check every layer's manifest and blob bytes in this registry (repeatable)", collect, [])
    .option(
      "--trust <keyfile://PATH>",
      "also verify each layer manifest's own signature with this key (repeatable); without --registry, on the manifests the lockfile embeds",
      collect,
      [],
    )
    .option("--max-age <age>", "refuse a lockfile older than this: a Go duration (90m, 1h30m, 720h), 30d or 2w; 0 for no bound")
    .option("--allow-unsigned-offline", "accept a lockfile whose policy is unsigned-offline")
    .option("--base <base>", "probe the base now (host, rootfs:DIR or oci:LAYOUT@sha256:DIGEST) and require the lockfile's base digest")
    .option("--contents", "with --registry: also unpack every layer and check it holds exactly the files its manifest lists")
    .option("--json", "print the result as JSON")
    .action(async (path: string, opts: VerifyOpts) => {
      const now = clock(ctx.env);
      const probed = await probeBaseFlag(ctx, opts.base, now);
      const maxAgeMs = opts.maxAge !== undefined ? parseMaxAge(opts.maxAge) : undefined;
      const regs = opts.registry.length > 0 ? openRegistries({ env: ctx.env, cwd: ctx.cwd, registries: opts.registry, trust: [] }) : [];
      const report = verifyLock(path, {
        keys: [readVerifyingKey(opts.pub)],
        now,
        ...(probed !== undefined ? { probedBase: probed } : {}),
        ...(maxAgeMs !== undefined ? { maxAgeMs, maxAgeText: opts.maxAge! } : {}),
        registries: regs.map((r) => r.registry),
        layerKeys: opts.trust.map((t) => readTrust(t, ctx.cwd)),
        allowUnsignedOffline: opts.allowUnsignedOffline === true,
      });
      if (opts.contents && regs.length === 0) throw new CairnError("USAGE", "--contents needs --registry");
      const contentsChecked = opts.contents
        ? await verifyLockContents(
            report.lock,
            regs.map((r) => r.registry),
          )
        : null;
      const caveats = lockfileCaveats(report.lock);
      if (opts.json) {
        printJson(ctx.io, {
          verified: true,
          environment_id: report.environment_id,
          signed_by: report.signature.keyid,
          resolved_at: report.lock.resolved_at,
          age: report.freshness.age,
          age_seconds: Math.floor(report.freshness.ageMs / 1000),
          future_dated: report.freshness.future,
          verification_policy: report.verification_policy,
          layers_checked: report.layers_checked,
          contents_checked: contentsChecked,
          base_checked: report.base_checked,
          layer_signatures_checked: opts.trust.length > 0 && (report.layers_checked !== null || report.embedded_signatures_checked !== null),
          embedded_signatures_checked: report.embedded_signatures_checked,
          caveats,
        });
        return;
      }
      const lines = [
        `verified ${path}`,
        `environment ${report.environment_id}`,
        `signed by   ${report.signature.keyid}`,
        `resolved    ${report.lock.resolved_at} (${report.freshness.future ? `FUTURE-DATED: ${report.freshness.age}` : `${report.freshness.age} old`})`,
        `policy      ${report.verification_policy}`,
        `base        ${report.lock.base.name} ${report.lock.base.arch} (${report.base_checked ? "re-probed: digest matches" : `${report.lock.base.source === "declared" ? "declared" : `probed from ${report.lock.base.source}`} at resolution; not re-probed (give --base to check it)`})`,
        `layers      ${report.layers_checked === null ? `${report.lock.layers.length}, bytes NOT checked (give --registry to check them)${report.embedded_signatures_checked !== null ? `; ${report.embedded_signatures_checked} signature(s) verified on the embedded manifests` : ""}` : `${report.layers_checked} checked: manifests and blob bytes match${opts.trust.length ? ", layer signatures verified" : ""}${contentsChecked !== null ? ", unpacked contents match their manifests" : ""}`}`,
        ...caveats.map((c) => `  ! ${c}`),
      ];
      ctx.io.out(lines.join("\n"));
    });
}
