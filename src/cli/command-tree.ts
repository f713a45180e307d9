/**
 * The command tree as plain data: every visible command, its arguments and
 * options, read from the commander program itself (the definitions `--help`
 * prints), so shell completion and the man pages are generated from the same
 * source and cannot drift from the commands (issue 36, item 5). Hidden
 * commands and options stay out, as they stay out of `--help`.
 *
 * The generated shell scripts embed command and option names as words, so a
 * name is checked against a plain word pattern here (a name with a quote, a
 * space or `$` would be code in a completion script): a command definition
 * that breaks it fails the generation, never the user's shell.
 */
import { Help, type Command } from "commander";
import { CairnError } from "../core/index.ts";

export interface OptionNode {
  /** As written in the definition: `-o, --out <file>`. */
  readonly flags: string;
  readonly long?: string;
  readonly short?: string;
  /** The value's name (`file` of `<file>`), when the option takes one. */
  readonly value?: string;
  readonly valueOptional: boolean;
  readonly choices: readonly string[];
  readonly description: string;
}

export interface ArgumentNode {
  readonly name: string;
  readonly required: boolean;
  readonly variadic: boolean;
  readonly choices: readonly string[];
  readonly description: string;
}

export interface CommandNode {
  readonly name: string;
  /** The words from the program's name to this command: `["cairn", "lock", "diff"]`. */
  readonly path: readonly string[];
  readonly description: string;
  /** commander's usage line (`[options] <a> <b>`). */
  readonly usage: string;
  readonly arguments: readonly ArgumentNode[];
  readonly options: readonly OptionNode[];
  readonly commands: readonly CommandNode[];
}

/** A word a shell script may hold unquoted: a command, an option or a choice. */
const WORD = /^-{0,2}[A-Za-z0-9][A-Za-z0-9._+-]*$/;

function word(w: string, what: string): string {
  if (!WORD.test(w)) throw new CairnError("INTERNAL", `${what} ${JSON.stringify(w)} is not a plain word; completion scripts hold names unquoted`);
  return w;
}

const help = new Help();

function optionNode(o: import("commander").Option, at: string): OptionNode {
  const value = /[<[]([^>\]]+)[>\]]/.exec(o.flags)?.[1];
  return {
    flags: o.flags,
    ...(o.long !== undefined ? { long: word(o.long, `option of ${at}`) } : {}),
    ...(o.short !== undefined ? { short: word(o.short, `option of ${at}`) } : {}),
    ...(value !== undefined ? { value } : {}),
    valueOptional: o.optional,
    choices: (o.argChoices ?? []).map((c) => word(c, `choice of ${o.flags} of ${at}`)),
    description: o.description,
  };
}

/** The tree of `cmd` (normally the whole program: build it with every command loaded). */
export function commandTree(cmd: Command, parent: readonly string[] = []): CommandNode {
  const path = [...parent, word(cmd.name(), "command")];
  const at = path.join(" ");
  return {
    name: cmd.name(),
    path,
    description: cmd.description(),
    usage: cmd.usage(),
    arguments: help.visibleArguments(cmd).map((a) => ({
      name: a.name(),
      required: a.required,
      variadic: a.variadic,
      choices: (a.argChoices ?? []).map((c) => word(c, `choice of <${a.name()}> of ${at}`)),
      description: a.description,
    })),
    options: help.visibleOptions(cmd).map((o) => optionNode(o, at)),
    commands: help
      .visibleCommands(cmd)
      .filter((c) => c.name() !== "help")
      .map((c) => commandTree(c, path)),
  };
}

/** Every command of the tree, depth first, the root first. */
export function allCommands(root: CommandNode): CommandNode[] {
  return [root, ...root.commands.flatMap(allCommands)];
}
