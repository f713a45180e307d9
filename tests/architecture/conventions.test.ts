// Conventions that keep one definition per rule: each pattern below may
// appear only in its one home (or in an allow-listed file, with the reason).
// A stale allow-list entry (the file no longer matches) fails too, so the
// list never grows quietly. Each rule is run on a planted snippet first (the
// control) to show the pattern catches what it names.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readSources } from "./source-graph.ts";

interface Convention {
  readonly name: string;
  readonly pattern: RegExp;
  /** The one file (relative to src/) where the pattern defines the rule. */
  readonly home: readonly string[];
  /** Other files allowed to match, each with the reason. */
  readonly allow: Readonly<Record<string, string>>;
  /** A snippet the pattern must catch (the control). */
  readonly planted: string;
}

export const CONVENTIONS: readonly Convention[] = [
  {
    name: "inline tag hashing (an identity's tag framed by hand)",
    pattern: /\\0`|`\$\{[A-Za-z_.]+\}\\0|(?:sha256|blake3)\(\s*canonicalBytes\(|(?:sha256|blake3)\(\s*Buffer\.concat\(\[\s*Buffer\.from\(`/,
    home: ["core/identity.ts"],
    allow: {
      "vm/cpio.ts": "the newc format ends each member name with a NUL byte; a file name, not an identity tag",
      "workload/verify-memo.ts": "the build fingerprint ends each code file's name and size with a NUL; local only, never an identity",
    },
    planted: 'return sha256(Buffer.concat([Buffer.from(`${TAG}\\0`, "utf8"), bytes]));',
  },
  {
    name: "inline byte-order comparison",
    pattern: /\bBuffer\.compare\b|\.localeCompare\(/,
    home: ["core/byte-order.ts"],
    allow: {},
    planted: "paths.sort(Buffer.compare);",
  },
  {
    name: "raw openSync (a file opened without the bounded reader's checks)",
    pattern: /\bopenSync\(/,
    home: ["core/files.ts"],
    allow: {},
    planted: "const fd = openSync(path, constants.O_RDONLY);",
  },
  {
    name: "XDG_ or HOME read outside the location resolver",
    pattern: /\.(?:XDG_[A-Z_]+|CAIRN_HOME)\b|\[\s*"(?:XDG_[A-Z_]+|CAIRN_HOME)"\s*\]|\bhomedir\(/,
    home: ["core/locations.ts"],
    allow: {},
    planted: 'const dir = env.XDG_CACHE_HOME ?? join(homedir(), ".cache");',
  },
  {
    // one escaper for every page cairn writes: a second copy is where a missed quote kind lets a workload's output into markup
    name: "HTML escaping outside the page kit",
    pattern: /["'`]&(?:amp|lt|gt|quot|#39|#x27);["'`]/,
    home: ["core/html-page.ts"],
    allow: {},
    planted: 'const esc = (v: string) => v.replaceAll("&", "&amp;").replaceAll("<", "&lt;");',
  },
  {
    // in the CLI bundle every module's import.meta.url is the bundle's (dist/cli/bundle.js): a path relative to a
    // module's own folder would name dist/cli/ there; code-path.ts names files from the code root instead
    name: "a file path built from a module's own URL",
    pattern: /new URL\([^)]*import\.meta\.url|fileURLToPath\(import\.meta\.url\)|import\.meta\.(?:dirname|filename)\b/,
    home: ["core/code-path.ts"],
    allow: {},
    planted: 'const text = readFileSync(new URL(`./schemas/${f}.json`, import.meta.url), "utf8");',
  },
];

/** Strips comments, so a doc comment that names a pattern does not count. */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`\\])\/\/[^\n]*/g, "$1");
}

const sources = readSources();

for (const c of CONVENTIONS) {
  test(`convention: ${c.name} only in ${c.home.join(", ")}`, () => {
    assert.ok(c.pattern.test(c.planted), "control: the pattern catches the planted snippet");
    const matching = sources.filter((f) => c.pattern.test(code(f.text))).map((f) => f.rel);
    const outside = matching.filter((rel) => !c.home.includes(rel) && c.allow[rel] === undefined);
    assert.deepEqual(outside, [], `move these to ${c.home.join(", ")} or allow-list them with a reason`);
    const stale = Object.keys(c.allow).filter((rel) => !matching.includes(rel));
    assert.deepEqual(stale, [], "allow-list entries whose file no longer matches");
    for (const home of c.home)
      assert.ok(
        sources.some((f) => f.rel === home),
        `the home ${home} exists`,
      );
  });
}
