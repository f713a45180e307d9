/**
 * Variable substitutions in devcontainer.json values. The devcontainer CLI
 * replaces `${name}` and `${name:arg…}` (matched by /\$\{(.*?)\}/) with values
 * taken from the host: its environment, the local folder path, an id derived
 * from host labels. A declaration holding one of these is not one
 * environment but one per host, so it is refused wherever it appears in an
 * field that reaches an address. Excluded (cosmetic) fields are not read
 * through here: the standard excludes them from identity, so a host value in
 * a display name cannot change what an address claims.
 *
 * Decisions (docs/manifest.md repeats them):
 *   - `${localEnv:…}`, `${env:…}` (the CLI's alias), `${localWorkspaceFolder}`,
 *     `${localWorkspaceFolderBasename}`, `${devcontainerId}`: refused (host).
 *   - `${containerEnv:…}`: kept verbatim in `remoteEnv`, where the spec
 *     resolves it against the container (image + containerEnv, both in the
 *     core); refused elsewhere, where its meaning is tool-dependent.
 *   - `${containerWorkspaceFolder}`, `${containerWorkspaceFolderBasename}`:
 *     expanded from a declared `workspaceFolder`; refused when none is
 *     declared, because the default derives from the host folder's name.
 *   - `${templateOption:…}`: refused; the file is an un-applied devcontainer
 *     template (`cairn manifest apply-template`, template.ts, fills it in).
 *   - any other `${…}` is left alone, as the CLI leaves it (e.g. `${PATH}`
 *     reaches the container literally).
 * Names are matched case-insensitively so that a tool with looser matching
 * cannot substitute a host value the identity never saw.
 */
import { posix } from "node:path";

const VARIABLE = /\$\{(.*?)\}/g;

export type VariableClass = "host" | "container-env" | "workspace" | "template" | "literal";

const CLASSES: ReadonlyMap<string, VariableClass> = new Map([
  ["localenv", "host"],
  ["env", "host"],
  ["localworkspacefolder", "host"],
  ["localworkspacefolderbasename", "host"],
  ["devcontainerid", "host"],
  ["containerenv", "container-env"],
  ["containerworkspacefolder", "workspace"],
  ["containerworkspacefolderbasename", "workspace"],
  ["templateoption", "template"],
]);

export function classifyVariable(inner: string): { name: string; cls: VariableClass } {
  const name = inner.split(":")[0]!.trim();
  return { name, cls: CLASSES.get(name.toLowerCase()) ?? "literal" };
}

export interface SubstitutionContext {
  /** The declared workspaceFolder, if any (already checked to be substitution-free). */
  workspaceFolder: string | undefined;
  /** Whether `${containerEnv:…}` is meaningful here (only in remoteEnv). */
  containerEnvAllowed: boolean;
}

export type SubstitutionResult = { ok: true; value: string } | { ok: false; variable: string; why: string };

/**
 * Resolves the substitutions cairn allows in `unsafeValue` and reports the
 * first it refuses. The value itself is never part of the report (it may be a
 * secret); only the variable's name is.
 */
export function substitute(unsafeValue: string, ctx: SubstitutionContext): SubstitutionResult {
  let refused: { variable: string; why: string } | undefined;
  const value = unsafeValue.replace(VARIABLE, (match, inner: string) => {
    if (refused) return match;
    const { name, cls } = classifyVariable(inner);
    switch (cls) {
      case "host":
        refused = { variable: name, why: "takes its value from the host" };
        return match;
      case "container-env":
        if (!ctx.containerEnvAllowed) refused = { variable: name, why: "is only resolved in remoteEnv" };
        return match;
      case "workspace":
        if (ctx.workspaceFolder === undefined) {
          refused = { variable: name, why: "defaults to a path named after the host folder; declare workspaceFolder" };
          return match;
        }
        return name.toLowerCase() === "containerworkspacefolder" ? ctx.workspaceFolder : posix.basename(ctx.workspaceFolder);
      case "template":
        refused = {
          variable: name,
          why: "is an un-applied template option: this file is a devcontainer template, not an environment; apply it first: `cairn manifest apply-template TEMPLATE_DIR [--option NAME=VALUE]…` (or `devcontainer templates apply`)",
        };
        return match;
      case "literal":
        return match;
    }
  });
  return refused ? { ok: false, ...refused } : { ok: true, value };
}
