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

function describe(checker: ts.TypeChecker, sym: ts.Symbol): string {
  const target = sym.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(sym) : sym;
  const decl = target.declarations?.[0];
  const name = sym.getName();
  const f = target.flags;
  if (f & ts.SymbolFlags.Class) {
    const type = checker.getDeclaredTypeOfSymbol(target);
    const members = checker
      .getPropertiesOfType(type)
      .filter((m) => !m.getName().startsWith("#") && !(ts.getCombinedModifierFlags(m.valueDeclaration ?? (m.declarations?.[0] as ts.Declaration)) & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)))
      .sort(byName)
      .map((m) => `  ${m.getName()}: ${clean(checker.typeToString(checker.getTypeOfSymbol(m), decl, FORMAT))}`);
    const statics = checker.getTypeOfSymbol(target);
    const ctor = statics.getConstructSignatures().map((s) => `  new${clean(checker.signatureToString(s, decl, FORMAT)).replace(/^<[^>]*>/, "")}`);
    const staticMembers = checker
      .getPropertiesOfType(statics)
      .filter((m) => m.getName() !== "prototype" && !(ts.getCombinedModifierFlags(m.valueDeclaration ?? (m.declarations?.[0] as ts.Declaration)) & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)))
      .sort(byName)
      .map((m) => `  static ${m.getName()}: ${clean(checker.typeToString(checker.getTypeOfSymbol(m), decl, FORMAT))}`);
    return [`class ${name} {`, ...ctor, ...staticMembers, ...members, "}"].join("\n");
  }
  if (f & ts.SymbolFlags.Function) {
    const sigs = checker.getTypeOfSymbol(target).getCallSignatures();
    return sigs.map((s) => `function ${name}${clean(checker.signatureToString(s, decl, FORMAT))}`).join("\n");
  }
  if (f & (ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias)) {
    const type = checker.getDeclaredTypeOfSymbol(target);
    const keyword = f & ts.SymbolFlags.Interface ? "interface" : "type";
    const props = checker.getPropertiesOfType(type);
    if (f & ts.SymbolFlags.Interface || (props.length > 0 && !type.isUnion())) {
      const lines = [...props].sort(byName).map((p) => {
        const opt = p.flags & ts.SymbolFlags.Optional ? "?" : "";
        const ro = p.declarations?.some((d) => ts.getCombinedModifierFlags(d) & ts.ModifierFlags.Readonly) ? "readonly " : "";
        return `  ${ro}${p.getName()}${opt}: ${clean(checker.typeToString(checker.getTypeOfSymbol(p), decl, FORMAT))}`;
      });
      return [`${keyword} ${name} {`, ...lines, "}"].join("\n");
    }
    return `type ${name} = ${clean(checker.typeToString(type, decl, FORMAT | ts.TypeFormatFlags.InTypeAlias))}`;
  }
  if (f & (ts.SymbolFlags.Variable | ts.SymbolFlags.Property)) {
    return `const ${name}: ${clean(checker.typeToString(checker.getTypeOfSymbol(target), decl, FORMAT))}`;
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
}

export function buildApiReport(): ApiReport {
  const program = ts.createProgram([ENTRY], {
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
  const source = program.getSourceFile(ENTRY);
  if (source === undefined) throw new Error(`cannot read ${ENTRY}`);
  const moduleSym = checker.getSymbolAtLocation(source);
  if (moduleSym === undefined) throw new Error(`${ENTRY} is not a module`);
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
        return describe(checker, m);
      });
      sections.push(`## ${sym.getName()}\n\n\`\`\`ts\n${body.join("\n\n")}\n\`\`\``);
    } else {
      allNames.push(sym.getName());
      rootLines.push(describe(checker, sym));
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
  return { text, rootNames, allNames };
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
