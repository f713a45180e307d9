import type { Command } from "commander";
import { formationOf } from "../../strata/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";
import { collect, openOrInit, signingKeys } from "../flags.ts";
import { remoteFlags, type RemoteFlags } from "../remote-flags.ts";

interface FormationOpts extends RemoteFlags {
  name: string;
  version: string;
  layer: string[];
  description?: string;
  registry?: string;
  key?: string;
  unsigned?: boolean;
  json?: boolean;
}

/** `cairn formation build --name N --version V --layer ID… --registry REG --key KEY`. */
export function registerFormation(program: Command, ctx: Context): void {
  const formation = program.command("formation").description("named, versioned groups of layers");
  remoteFlags(formation.command("build"))
    .description("sign and publish a formation over published layers (their order is their mount order among themselves)")
    .requiredOption("--name <name>", "formation name")
    .requiredOption("--version <version>", "formation version")
    .option("--layer <id>", "a member layer id, lowest first (repeatable)", collect, [])
    .option("--description <text>", "one line describing the formation")
    .option("--registry <dir>", "a directory registry or oci://HOST/REPO to publish to (default $CAIRN_HOME/registry or $XDG_DATA_HOME/cairn/registry)")
    .option("--key <key>", "Ed25519 private key to sign the formation")
    .option("--unsigned", "publish without a signature")
    .option("--json", "print the result as JSON")
    .action(async (opts: FormationOpts) => {
      const keys = signingKeys(opts);
      const reg = await openOrInit(ctx, opts.registry, false, opts);
      const f = formationOf(reg, opts.name, opts.version, opts.layer, opts.description);
      const doc = await reg.publishFormation(f, keys);
      if (opts.json) {
        printJson(ctx.io, "cairn.cli.formation-build/1", {
          name: f.name,
          version: f.version,
          layers: f.layers,
          envelope_sha256: doc.envelopeSha256,
          signed: keys.length > 0,
        });
        return;
      }
      ctx.io.out(
        [
          `published formation ${f.name}@${f.version} (${keys.length > 0 ? `signed by ${keys[0]!.keyId}` : "UNSIGNED"})`,
          ...f.layers.map((l) => `  ${l.id}  ${l.sha256}`),
        ].join("\n"),
      );
    });
}
