/**
 * Reads the import graph of src/ from the sources themselves (static
 * `import`/`export ... from` and dynamic `import("...")` with a literal), for
 * the guard-rail tests. Test code: an oracle independent of the code it
 * checks, so it parses text and knows nothing of cairn's modules.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { PROJECT_ROOT } from "../helpers/vectors.ts";

export const SRC = join(PROJECT_ROOT, "src");

export interface SourceFile {
  /** Path relative to src/, with "/" separators (e.g. "strata/probe.ts"). */
  readonly rel: string;
  readonly text: string;
  /** Resolved relative imports (paths relative to src/), with whether the import is type-only. */
  readonly imports: readonly { readonly to: string; readonly typeOnly: boolean; readonly line: number }[];
}

function walk(dir: string, out: string[]): void {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else if (e.isFile() && e.name.endsWith(".ts")) out.push(p);
  }
}

const IMPORT = /(?:^|\n)\s*(import|export)\s+(type\s+)?(?:[^"';]*?\sfrom\s+)?"([^"]+)"/g;
const DYNAMIC = /\bimport\(\s*"([^"]+)"\s*\)/g;

/** Strips comments (so an import shown in a doc comment is not read as one); keeps line numbers. */
function withoutComments(text: string): string {
  return text
    .replace(/\/\*[\s\S]*?\*\//g, (m) => m.replace(/[^\n]/g, " "))
    .replace(/(^|[^:"'`\\])\/\/[^\n]*/g, (m, p: string) => p + " ".repeat(m.length - p.length));
}

export function readSources(): SourceFile[] {
  const files: string[] = [];
  walk(SRC, files);
  files.sort();
  return files.map((abs) => {
    const text = readFileSync(abs, "utf8");
    const code = withoutComments(text);
    const imports: { to: string; typeOnly: boolean; line: number }[] = [];
    const add = (spec: string, typeOnly: boolean, index: number): void => {
      if (!spec.startsWith(".")) return;
      const to = relative(SRC, resolve(dirname(abs), spec)).replaceAll("\\", "/");
      imports.push({ to, typeOnly, line: code.slice(0, index).split("\n").length });
    };
    for (const m of code.matchAll(IMPORT)) add(m[3]!, m[2] !== undefined, m.index ?? 0);
    for (const m of code.matchAll(DYNAMIC)) add(m[1]!, false, m.index ?? 0);
    return { rel: relative(SRC, abs).replaceAll("\\", "/"), text, imports };
  });
}

/** The area of a file: its first directory under src/, or "(root)" for src/index.ts. */
export function areaOf(rel: string): string {
  const i = rel.indexOf("/");
  return i === -1 ? "(root)" : rel.slice(0, i);
}

/** Strongly connected components of more than one file (Tarjan), each sorted. */
export function cycles(nodes: readonly string[], edges: ReadonlyMap<string, readonly string[]>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    on.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const comp: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1) out.push(comp.sort());
    }
  };
  for (const n of nodes) if (!idx.has(n)) visit(n);
  return out;
}
