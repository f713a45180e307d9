import { Argument, type Command } from "commander";
import { CAIRN_VERSION } from "../cairn-version.ts";
import { commandTree } from "../command-tree.ts";
import { completionScript, SHELLS, type Shell } from "../completion-scripts.ts";
import type { Context } from "../context.ts";

/**
 * `cairn completion bash|zsh|fish`: prints the shell's completion script,
 * generated from the program's own command definitions (program.ts loads
 * every command for this one, so the tree is whole).
 */
export function registerCompletion(program: Command, ctx: Context): void {
  program
    .command("completion")
    .description(
      "print a shell completion script for cairn's commands and options (bash: source <(cairn completion bash); zsh: source <(cairn completion zsh) after compinit; fish: cairn completion fish | source)",
    )
    .addArgument(new Argument("<shell>", "the shell to complete in").choices(SHELLS))
    .action((shell: Shell) => {
      ctx.io.out(completionScript(shell, commandTree(program), CAIRN_VERSION));
    });
}
