/**
 * The public API report: every name `import ... from "cairn"` (and each
 * `cairn/<area>` subpath) exposes, with its kind and type, written to
 * `api/cairn.api.md`. The report is generated from the TypeScript sources
 * with the compiler's own checker, so it is exactly what a user's editor
 * sees. `tests/architecture/api-report.test.ts` regenerates it and fails when
 * it differs from the checked-in copy: a change to the public surface is then
 * a reviewed diff of that file, never an accident of an `export *`.
 *
 *   node --import tsx scripts/api-report.ts          # print the report
 *   node --import tsx scripts/api-report.ts --write  # update api/cairn.api.md
 */
import { writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
export const REPORT_PATH = join(ROOT, "api", "cairn.api.md");
const ENTRY = join(ROOT, "src", "index.ts");

const FORMAT = ts.TypeFormatFlags.NoTruncation | ts.TypeFormatFlags.UseFullyQualifiedType | ts.TypeFormatFlags.WriteArrayAsGenericType;

function byName(a: ts.Symbol, b: ts.Symbol): number {
  const x = Buffer.from(a.getName(), "utf8");
  const y = Buffer.from(b.getName(), "utf8");
  return Buffer.compare(x, y);
}

/** Strips the absolute import paths the checker writes into qualified names, so the report does not depend on the checkout's location. */
function clean(text: string): string {
  return text.replace(/import\("([^"]+)"\)\./g, (_m, p: string) => {
    const rel = relative(ROOT, p).replaceAll("\\", "/");
    return rel.startsWith("node_modules/") ? `import("${rel.replace(/^node_modules\/(@types\/)?/, "")}").` : "";
  });
}

/** The type of a member or constant as written at its declaration when it has an annotation, else as the checker infers it. */
function typeText(checker: ts.TypeChecker, sym: ts.Symbol, at: ts.Node | undefined): string {
  const d = sym.valueDeclaration ?? sym.declarations?.[0];
  const annotated =
    d !== undefined && (ts.isPropertyDeclaration(d) || ts.isPropertySignature(d) || ts.isVariableDeclaration(d) || ts.isParameter(d)) ? d.type : undefined;
  if (annotated !== undefined) return annotated.getText().replace(/\s+/g, " ");
  return clean(checker.typeToString(checker.getTypeOfSymbol(sym), at, FORMAT));
}

function isHidden(m: ts.Symbol): boolean {
  if (m.getName().startsWith("#")) return true;
  const d = m.valueDeclaration ?? m.declarations?.[0];
  return d !== undefined && (ts.getCombinedModifierFlags(d as ts.Declaration) & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) !== 0;
}

/** Members declared by the class itself (not inherited from Error and the like), public ones only. */
function ownMembers(members: ReadonlyMap<ts.__String, ts.Symbol> | undefined): ts.Symbol[] {
  return [...(members?.values() ?? [])].filter((m) => m.getName() !== "__constructor" && !isHidden(m)).sort(byName);
}

function memberLine(checker: ts.TypeChecker, m: ts.Symbol, at: ts.Node | undefined, prefix = ""): string {
  const d = m.valueDeclaration ?? m.declarations?.[0];
  if (d !== undefined && (ts.isMethodDeclaration(d) || ts.isGetAccessorDeclaration(d))) {
    const sigs = checker.getTypeOfSymbol(m).getCallSignatures();
    if (ts.isGetAccessorDeclaration(d)) return `  ${prefix}get ${m.getName()}: ${clean(checker.typeToString(checker.getTypeOfSymbol(m), at, FORMAT))}`;
    return sigs.map((s) => `  ${prefix}${m.getName()}${clean(checker.signatureToString(s, at, FORMAT))}`).join("\n");
  }
  const ro = d !== undefined && ts.getCombinedModifierFlags(d as ts.Declaration) & ts.ModifierFlags.Readonly ? "readonly " : "";
  const opt = m.flags & ts.SymbolFlags.Optional ? "?" : "";
  return `  ${prefix}${ro}${m.getName()}${opt}: ${typeText(checker, m, at)}`;
}

function describe(checker: ts.TypeChecker, sym: ts.Symbol): string {
  const target = sym.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(sym) : sym;
  const decl = target.declarations?.[0];
  const name = sym.getName();
  const f = target.flags;
  if (f & ts.SymbolFlags.Class) {
    const statics = checker.getTypeOfSymbol(target);
    const ctor = statics.getConstructSignatures().map(
      (s) =>
        `  constructor${clean(checker.signatureToString(s, decl, FORMAT))
          .replace(/^<[^>]*>/, "")
          .replace(/: [^:]*$/, "")}`,
    );
    const heritage =
      decl !== undefined && ts.isClassDeclaration(decl) && decl.heritageClauses !== undefined
        ? ` ${decl.heritageClauses.map((h) => h.getText()).join(" ")}`
        : "";
    const lines = [
      ...ctor,
      ...ownMembers(target.exports)
        .filter((m) => m.getName() !== "prototype")
        .map((m) => memberLine(checker, m, decl, "static ")),
      ...ownMembers(target.members).map((m) => memberLine(checker, m, decl)),
    ];
    return [`class ${name}${heritage} {`, ...lines, "}"].join("\n");
  }
  if (f & ts.SymbolFlags.Function) {
    const sigs = checker.getTypeOfSymbol(target).getCallSignatures();
    return sigs.map((s) => `function ${name}${clean(checker.signatureToString(s, decl, FORMAT))}`).join("\n");
  }
  if (f & ts.SymbolFlags.Interface) {
    const lines = ownMembers(target.members).map((m) => memberLine(checker, m, decl));
    const heritage =
      decl !== undefined && ts.isInterfaceDeclaration(decl) && decl.heritageClauses !== undefined
        ? ` ${decl.heritageClauses.map((h) => h.getText()).join(" ")}`
        : "";
    return [`interface ${name}${heritage} {`, ...lines, "}"].join("\n");
  }
  if (f & ts.SymbolFlags.TypeAlias) {
    const node = decl !== undefined && ts.isTypeAliasDeclaration(decl) ? decl : undefined;
    const params = node?.typeParameters !== undefined ? `<${node.typeParameters.map((t) => t.getText()).join(", ")}>` : "";
    return `type ${name}${params} = ${node !== undefined ? node.type.getText().replace(/\s+/g, " ") : clean(checker.typeToString(checker.getDeclaredTypeOfSymbol(target), decl, FORMAT))}`;
  }
  if (f & (ts.SymbolFlags.Variable | ts.SymbolFlags.Property)) {
    return `const ${name}: ${typeText(checker, target, decl)}`;
  }
  return `${ts.SymbolFlags[f] ?? "symbol"} ${name}`;
}

export interface ApiReport {
  /** The report's text (markdown). */
  readonly text: string;
  /** Top-level names of the package root. */
  readonly rootNames: readonly string[];
  /** Every exported name, qualified by its namespace (`workload.assembleWorkload`). */
  readonly allNames: readonly string[];
  /**
   * Types a public signature names that the package does not export, each as
   * `workload.assembleWorkload -> PullProgress (src/oci/registry/pull.ts)`: a
   * user can see such a type in their editor but cannot import it to declare
   * a variable or a parameter of it. Must be empty.
   */
  readonly unexported: readonly string[];
}

function isHiddenNode(d: ts.Node): boolean {
  return (ts.getCombinedModifierFlags(d as ts.Declaration) & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) !== 0;
}

/** The symbol a name stands for, through `export { x } from` and `import` aliases. */
function resolved(checker: ts.TypeChecker, sym: ts.Symbol): ts.Symbol {
  return sym.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(sym) : sym;
}

/**
 * The declared types (interfaces, type aliases, classes, enums) of this
 * project that the public part of `decl` names: parameter, return, property
 * and heritage types, and the return type a signature infers. Function
 * bodies and initializers are not public and are not read.
 */
function namedTypes(checker: ts.TypeChecker, decl: ts.Node, inProject: (s: ts.Symbol) => boolean): Set<ts.Symbol> {
  const out = new Set<ts.Symbol>();
  const KINDS = ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias | ts.SymbolFlags.Class | ts.SymbolFlags.Enum;
  const note = (sym: ts.Symbol | undefined): void => {
    if (sym === undefined) return;
    const target = resolved(checker, sym);
    if (target.flags & KINDS && !(target.flags & ts.SymbolFlags.TypeParameter) && inProject(target)) out.add(target);
  };
  const noteType = (type: ts.Type, depth = 0): void => {
    note(type.aliasSymbol);
    note(type.getSymbol());
    if (depth < 2) for (const a of [...(type.aliasTypeArguments ?? []), ...checker.getTypeArguments(type as ts.TypeReference)]) noteType(a, depth + 1);
    if (depth < 2 && type.isUnion()) for (const t of type.types) noteType(t, depth + 1);
  };
  const visit = (node: ts.Node): void => {
    if (ts.isBlock(node)) return; // a body
    if (ts.isClassElement(node) && node.name !== undefined && (ts.isPrivateIdentifier(node.name) || isHiddenNode(node))) return; // not public
    if ((ts.isTypeReferenceNode(node) || ts.isExpressionWithTypeArguments(node)) && node.getSourceFile() !== undefined) {
      note(checker.getSymbolAtLocation(ts.isTypeReferenceNode(node) ? node.typeName : node.expression));
    }
    if (ts.isTypeQueryNode(node)) note(checker.getSymbolAtLocation(node.exprName));
    if (ts.isFunctionLike(node) && node.type === undefined && !ts.isConstructorDeclaration(node)) {
      const sig = checker.getSignatureFromDeclaration(node);
      if (sig !== undefined) noteType(checker.getReturnTypeOfSignature(sig));
    }
    if ((ts.isVariableDeclaration(node) || ts.isPropertyDeclaration(node)) && node.type === undefined) {
      noteType(checker.getTypeAtLocation(node.name));
      return; // its initializer is not public
    }
    if ((ts.isVariableDeclaration(node) || ts.isPropertyDeclaration(node) || ts.isParameter(node)) && node.initializer !== undefined) {
      visit(node.name);
      if (node.type !== undefined) visit(node.type);
      return;
    }
    ts.forEachChild(node, visit);
  };
  visit(decl);
  return out;
}

export function buildApiReport(entry: string = ENTRY): ApiReport {
  const program = ts.createProgram([entry], {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    allowImportingTsExtensions: true,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: ["node"],
  });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(entry);
  if (source === undefined) throw new Error(`cannot read ${entry}`);
  const moduleSym = checker.getSymbolAtLocation(source);
  if (moduleSym === undefined) throw new Error(`${entry} is not a module`);
  const projectDir = dirname(entry);
  const inProject = (s: ts.Symbol): boolean =>
    (s.declarations ?? []).some((d) => {
      const f = d.getSourceFile().fileName;
      return !f.includes("/node_modules/") && !relative(projectDir, f).startsWith("..");
    });
  const exported = new Set<ts.Symbol>();
  const publicDecls: Array<{ name: string; sym: ts.Symbol }> = [];
  const rootNames: string[] = [];
  const allNames: string[] = [];
  const sections: string[] = [];
  const rootLines: string[] = [];
  for (const sym of checker.getExportsOfModule(moduleSym).sort(byName)) {
    rootNames.push(sym.getName());
    const target = sym.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(sym) : sym;
    if (target.flags & ts.SymbolFlags.ValueModule && target.declarations?.some(ts.isSourceFile)) {
      const members = checker.getExportsOfModule(target).sort(byName);
      rootLines.push(`namespace ${sym.getName()} (${members.length} names)`);
      const body = members.map((m) => {
        allNames.push(`${sym.getName()}.${m.getName()}`);
        exported.add(resolved(checker, m));
        publicDecls.push({ name: `${sym.getName()}.${m.getName()}`, sym: resolved(checker, m) });
        return describe(checker, m);
      });
      sections.push(`## ${sym.getName()}\n\n\`\`\`ts\n${body.join("\n\n")}\n\`\`\``);
    } else {
      allNames.push(sym.getName());
      exported.add(target);
      publicDecls.push({ name: sym.getName(), sym: target });
      rootLines.push(describe(checker, sym));
    }
  }
  const unexported = new Set<string>();
  for (const { name, sym } of publicDecls) {
    for (const d of sym.declarations ?? []) {
      for (const t of namedTypes(checker, d, inProject)) {
        if (exported.has(t) || t === sym) continue;
        const where = relative(ROOT, t.declarations![0]!.getSourceFile().fileName).replaceAll("\\", "/");
        unexported.add(`${name} -> ${t.getName()} (${where})`);
      }
    }
  }
  const text = [
    "# cairn public API report",
    "",
    "Generated by `node --import tsx scripts/api-report.ts --write` from `src/index.ts`; do not edit by hand.",
    "`tests/architecture/api-report.test.ts` fails when the public surface differs from this file.",
    "",
    "## package root",
    "",
    "```ts",
    rootLines.join("\n"),
    "```",
    "",
    sections.join("\n\n"),
    "",
  ].join("\n");
  return { text, rootNames, allNames, unexported: [...unexported].sort() };
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const report = buildApiReport();
  if (process.argv.includes("--write")) {
    writeFileSync(REPORT_PATH, report.text);
    process.stderr.write(`wrote ${relative(ROOT, REPORT_PATH)}: ${report.rootNames.length} root names, ${report.allNames.length} names in all\n`);
  } else {
    process.stdout.write(report.text);
  }
}
