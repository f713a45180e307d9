// `cairn manifest apply-template` (issue 33, item 3): a devcontainer template
// folder, built here at test time in the layout of devcontainers/templates,
// applied with its defaults or given options, then ingested. Every refusal
// has a control that the same template applies when the input is good.
import { test } from "node:test";
import fc from "fast-check";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CairnError, parseJsonText, toJsonValue } from "../../src/core/index.ts";
import { applyTemplate, ingestDevcontainer, parseTemplateMetadata } from "../../src/manifest/index.ts";
import { parseInputText } from "../../src/manifest/read.ts";
import { runCli } from "../helpers/cli.ts";

const root = mkdtempSync(join(tmpdir(), "cairn-template-"));
let n = 0;

const META = {
  id: "base",
  version: "1.0.0",
  name: "Base",
  description: "a template built by the test",
  options: {
    imageVariant: { type: "string", description: "variant", proposals: ["ubuntu", "debian"], default: "ubuntu" },
    flavour: { type: "string", enum: ["plain", "full"], default: "plain" },
    installZsh: { type: "boolean", default: "true" },
    upgrade: { type: "boolean", default: false },
  },
  platforms: ["Any"],
};
const CONFIG = `// a template's devcontainer.json: \${templateOption:flavour} in a comment too
{
  "name": "Base \${templateOption:imageVariant}",
  "image": "mcr.microsoft.com/devcontainers/base:\${templateOption:imageVariant}",
  "features": {
    "ghcr.io/devcontainers/features/common-utils:2": {
      "installZsh": "\${templateOption:installZsh}",
      "upgradePackages": "\${templateOption:upgrade}",
      "flavour": "\${templateOption: flavour }"
    }
  },
  "remoteUser": "vscode"
}
`;

/** A template folder: devcontainer-template.json plus the config at `config` (relative). */
function template(meta: unknown = META, config: string = CONFIG, where = ".devcontainer/devcontainer.json"): string {
  const dir = join(root, `t${n++}`);
  mkdirSync(join(dir, ".devcontainer"), { recursive: true });
  writeFileSync(join(dir, "devcontainer-template.json"), typeof meta === "string" ? meta : JSON.stringify(meta, null, 2));
  writeFileSync(join(dir, where), config);
  return dir;
}

function refusal(fn: () => unknown): CairnError {
  try {
    fn();
  } catch (e) {
    if (e instanceof CairnError) return e;
    throw e;
  }
  assert.fail("expected a refusal");
}

const parsed = (text: string): { [k: string]: unknown } => toJsonValue(parseJsonText(text, { jsonc: true })) as never;

test("defaults apply everywhere the CLI applies them: strings (with spaces inside the reference), comments; boolean defaults as written", () => {
  const r = applyTemplate(template());
  assert.equal(r.id, "base");
  assert.equal(r.config, join(".devcontainer", "devcontainer.json"));
  const v = parsed(r.text) as { image: string; name: string; features: { [k: string]: { [k: string]: string } } };
  assert.equal(v.image, "mcr.microsoft.com/devcontainers/base:ubuntu");
  assert.equal(v.name, "Base ubuntu");
  assert.deepEqual(v.features["ghcr.io/devcontainers/features/common-utils:2"], { installZsh: "true", upgradePackages: "false", flavour: "plain" });
  assert.match(r.text, /^\/\/ a template's devcontainer.json: plain in a comment too/);
  assert.ok(!r.text.includes("templateOption"));
  assert.deepEqual(
    r.options.map((o) => [o.name, o.value, o.source]),
    [
      ["flavour", "plain", "default"],
      ["imageVariant", "ubuntu", "default"],
      ["installZsh", "true", "default"],
      ["upgrade", "false", "default"],
    ],
  );
});

test("given options win over defaults; a proposals list is only a suggestion, an enum is a restriction", () => {
  const dir = template();
  const r = applyTemplate(
    dir,
    new Map([
      ["imageVariant", "noble"],
      ["flavour", "full"],
      ["installZsh", "false"],
    ]),
  );
  const v = parsed(r.text) as { image: string; features: { [k: string]: { [k: string]: string } } };
  assert.equal(v.image, "mcr.microsoft.com/devcontainers/base:noble"); // not among the proposals: accepted
  assert.equal(v.features["ghcr.io/devcontainers/features/common-utils:2"]!.flavour, "full");
  assert.equal(r.options.find((o) => o.name === "flavour")?.source, "given");
  const e = refusal(() => applyTemplate(dir, new Map([["flavour", "fancy"]])));
  assert.equal(e.code, "TEMPLATE_OPTION_VALUE");
  assert.equal(e.path, "/options/flavour");
  assert.match(e.hint ?? "", /"plain", "full"/);
});

test("an option the template does not declare is refused, naming it; so is a boolean that is not true/false", () => {
  const dir = template();
  const unknown = refusal(() => applyTemplate(dir, new Map([["imageVariants", "x"]])));
  assert.equal(unknown.code, "TEMPLATE_OPTION_UNKNOWN");
  assert.equal(unknown.path, "/options/imageVariants");
  const bool = refusal(() => applyTemplate(dir, new Map([["installZsh", "yes"]])));
  assert.equal(bool.code, "TEMPLATE_OPTION_VALUE");
  assert.equal(bool.path, "/options/installZsh");
  assert.doesNotThrow(() => applyTemplate(dir, new Map([["installZsh", "false"]]))); // control
});

test("a reference to an undeclared option, or to one without default that was not given, is refused (the CLI writes an empty string)", () => {
  const undeclared = template(META, `{ "image": "debian:\${templateOption:release}" }`);
  const e = refusal(() => applyTemplate(undeclared));
  assert.equal(e.code, "TEMPLATE_OPTION_UNKNOWN");
  assert.match(e.message, /release/);
  const meta = { id: "nodefault", options: { release: { type: "string", proposals: ["12"] } } };
  const noDefault = template(meta, `{ "image": "debian:\${templateOption:release}" }`);
  const m = refusal(() => applyTemplate(noDefault));
  assert.equal(m.code, "TEMPLATE_OPTION_VALUE");
  assert.equal(m.path, "/options/release");
  assert.equal((parsed(applyTemplate(noDefault, new Map([["release", "12"]])).text) as { image: string }).image, "debian:12"); // control
});

test("a value is inserted as JSON string content: a quote cannot add a field; a control character or a reference outside a string is refused", () => {
  const dir = template();
  const hostile = 'x", "privileged": true, "z": "';
  const r = applyTemplate(dir, new Map([["imageVariant", hostile]]));
  const v = parsed(r.text) as { [k: string]: unknown };
  assert.equal(v.image, `mcr.microsoft.com/devcontainers/base:${hostile}`);
  assert.ok(!("privileged" in v));
  assert.equal(refusal(() => applyTemplate(dir, new Map([["imageVariant", "a\nb"]]))).code, "TEMPLATE_OPTION_VALUE");
  const bare = template(META, `{ "image": "debian:12", "init": \${templateOption:installZsh} }`);
  assert.equal(refusal(() => applyTemplate(bare)).code, "TEMPLATE_INVALID");
  const blockComment = template(META, `/* \${templateOption:imageVariant} */ { "image": "debian:12" }`);
  assert.equal(refusal(() => applyTemplate(blockComment, new Map([["imageVariant", "*/ {"]]))).code, "TEMPLATE_OPTION_VALUE");
  assert.doesNotThrow(() => applyTemplate(blockComment, new Map([["imageVariant", "ok"]]))); // control
});

test("devcontainer-template.json is read strictly: unknown fields, a bad option type, a default outside its own enum", () => {
  const good = parseTemplateMetadata(parseJsonText(JSON.stringify(META)));
  assert.equal(good.options.size, 4); // control
  const bad = (m: unknown): CairnError => refusal(() => parseTemplateMetadata(parseJsonText(JSON.stringify(m))));
  assert.equal(bad({ ...META, author: "x" }).code, "MODEL_UNKNOWN_FIELD");
  assert.equal(bad({ id: "t", options: { a: { type: "number" } } }).code, "MODEL_VALUE");
  assert.equal(bad({ id: "t", options: { a: { type: "boolean", default: "yes" } } }).code, "MODEL_VALUE");
  assert.equal(bad({ id: "t", options: { a: { type: "string", enum: ["x"], default: "y" } } }).code, "TEMPLATE_OPTION_VALUE");
  assert.equal(bad({ id: "t", options: { "a-b": { type: "string" } } }).path, "/options/a-b");
  assert.equal(bad({ options: {} }).code, "MODEL_MISSING_FIELD");
});

test("the folder: .devcontainer.json works too; no metadata, no config, both configs, or a symlinked .devcontainer are refused", () => {
  const flat = join(root, "flat");
  mkdirSync(flat);
  writeFileSync(join(flat, "devcontainer-template.json"), JSON.stringify(META));
  writeFileSync(join(flat, ".devcontainer.json"), `{ "image": "debian:\${templateOption:imageVariant}" }`);
  assert.equal(applyTemplate(flat).config, ".devcontainer.json"); // control
  const both = template();
  writeFileSync(join(both, ".devcontainer.json"), "{}");
  assert.equal(refusal(() => applyTemplate(both)).code, "TEMPLATE_INVALID");
  const none = join(root, "none");
  mkdirSync(none);
  assert.equal(refusal(() => applyTemplate(none)).code, "TEMPLATE_INVALID");
  writeFileSync(join(none, "devcontainer-template.json"), JSON.stringify(META));
  assert.equal(refusal(() => applyTemplate(none)).code, "TEMPLATE_INVALID");
  // a .devcontainer that is a symlink to a folder elsewhere is not read through
  const outside = template();
  const linked = join(root, "linked");
  mkdirSync(linked);
  writeFileSync(join(linked, "devcontainer-template.json"), JSON.stringify(META));
  symlinkSync(join(outside, ".devcontainer"), join(linked, ".devcontainer"));
  assert.equal(refusal(() => applyTemplate(linked)).code, "TEMPLATE_INVALID");
  // a devcontainer-template.json that is a symlink is refused too
  const metaLink = join(root, "metalink");
  mkdirSync(join(metaLink, ".devcontainer"), { recursive: true });
  symlinkSync(join(outside, "devcontainer-template.json"), join(metaLink, "devcontainer-template.json"));
  writeFileSync(join(metaLink, ".devcontainer", "devcontainer.json"), "{}");
  assert.equal(refusal(() => applyTemplate(metaLink)).code, "TEMPLATE_INVALID");
});

test("end to end: ingest refuses the template as stored, naming apply-template; apply-template then ingest gives an identity", async () => {
  const dir = template();
  const stored = join(dir, ".devcontainer", "devcontainer.json");
  const before = await runCli(["manifest", "ingest", stored, "--json"]);
  assert.equal(before.code, 1);
  const err = JSON.parse(before.stdout).error;
  assert.equal(err.code, "MANIFEST_REFUSED");
  assert.match(JSON.stringify(err), /cairn manifest apply-template/);

  const out = join(root, "applied.json");
  const r = await runCli(["manifest", "apply-template", dir, "--option", "flavour=full", "--out", out]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /option {4}flavour \(given\)/);
  assert.match(r.stdout, /option {4}imageVariant \(the template's default\)/);
  const ingested = await runCli(["manifest", "ingest", out, "--json"]);
  assert.equal(ingested.code, 0, ingested.stdout);
  const doc = JSON.parse(ingested.stdout).manifest;
  assert.match(doc.address, /^blake3:[0-9a-f]{64}$/);
  assert.equal(doc.core.image, "mcr.microsoft.com/devcontainers/base:ubuntu");
  // the same identity as the file written by hand
  const byHand = ingestDevcontainer(
    parseJsonText(
      JSON.stringify({
        image: "mcr.microsoft.com/devcontainers/base:ubuntu",
        features: { "ghcr.io/devcontainers/features/common-utils:2": { installZsh: "true", upgradePackages: "false", flavour: "full" } },
        remoteUser: "vscode",
      }),
    ),
  ).manifest;
  assert.equal(doc.address, byHand.address);

  // stdout without --out: the text exactly, the options on stderr
  const printed = await runCli(["manifest", "apply-template", dir, "--option", "flavour=full"]);
  assert.equal(printed.code, 0);
  assert.equal(printed.stdout, readFileSync(out, "utf8"));
  assert.match(printed.stderr, /flavour/);
  const json = await runCli(["manifest", "apply-template", dir, "--json"]);
  assert.equal(JSON.parse(json.stdout).template, "base");
  assert.equal(JSON.parse(json.stdout).options.length, 4);
});

test("CLI refusals: exit 1 with the code, nothing written; a malformed or repeated --option is a usage error (exit 2)", async () => {
  const dir = template();
  const out = join(root, "never.json");
  const r = await runCli(["manifest", "apply-template", dir, "--option", "flavour=fancy", "--out", out, "--json"]);
  assert.equal(r.code, 1);
  assert.equal(JSON.parse(r.stdout).error.code, "TEMPLATE_OPTION_VALUE");
  assert.equal(JSON.parse(r.stdout).error.path, "/options/flavour");
  const u = await runCli(["manifest", "apply-template", dir, "--option", "nosuch=1", "--out", out, "--json"]);
  assert.equal(JSON.parse(u.stdout).error.code, "TEMPLATE_OPTION_UNKNOWN");
  assert.ok(!existsSync(out));
  assert.ok(!readdirSync(root).some((f) => f.endsWith(".tmp")));
  assert.equal((await runCli(["manifest", "apply-template", dir, "--option", "flavour"])).code, 2);
  assert.equal((await runCli(["manifest", "apply-template", dir, "--option", "flavour=full", "--option", "flavour=plain"])).code, 2);
  assert.equal((await runCli(["manifest", "apply-template", dir, "--option", "imageVariant=a=b", "--out", out])).code, 0); // control: '=' in a value
  assert.equal((parsed(readFileSync(out, "utf8")) as { image: string }).image, "mcr.microsoft.com/devcontainers/base:a=b");
});

// Second pass (issue 33): hostile templates.
test("a template's own default obeys the value rules: a newline in a default cannot break out of a line comment", () => {
  const meta = { id: "t", options: { a: { type: "string", default: 'x\n"privileged": true, "z": "' } } };
  const dir = template(meta, `{\n  // \${templateOption:a}\n  "image": "debian:12"\n}`);
  const e = refusal(() => applyTemplate(dir));
  assert.equal(e.code, "TEMPLATE_OPTION_VALUE");
  assert.equal(e.path, "/options/a");
  // control: the same template applies when the value is given without one
  assert.doesNotThrow(() => applyTemplate(dir, new Map([["a", "y"]])));
});

test("amplification: many references to a long value stop at max_input_bytes, before the text is built", () => {
  const meta = { id: "t", options: { a: { type: "string", default: "v".repeat(60_000) } } };
  const refs = Array.from({ length: 20_000 }, (_, i) => `"k${i}": "\${templateOption:a}"`).join(",");
  const dir = template(meta, `{ "image": "debian:12", "customizations": { ${refs} } }`);
  const e = refusal(() => applyTemplate(dir));
  assert.equal(e.code, "LIMIT_EXCEEDED");
  assert.match(e.message, /max_input_bytes/);
  // control: a few references apply
  const few = template(meta, `{ "image": "debian:12", "name": "\${templateOption:a}" }`);
  assert.equal(applyTemplate(few).text.length > 60_000, true);
});

test("nothing from the template but option names reaches a message: an id with control characters is escaped", () => {
  const dir = template({ ...META, id: "evil\u001b[2J\nid" });
  const e = refusal(() => applyTemplate(dir, new Map([["nosuch", "1"]])));
  assert.equal(e.code, "TEMPLATE_OPTION_UNKNOWN");
  assert.ok(!/[\u0000-\u001f]/.test(e.message), e.message);
});

test("a value is inserted once: a value holding ${templateOption:…} is not expanded again; a lone surrogate is refused", () => {
  const dir = template();
  const r = applyTemplate(dir, new Map([["imageVariant", "${templateOption:flavour}"]]));
  assert.equal((parsed(r.text) as { image: string }).image, "mcr.microsoft.com/devcontainers/base:${templateOption:flavour}");
  assert.equal(refusal(() => applyTemplate(dir, new Map([["imageVariant", "a\ud800"]]))).code, "TEMPLATE_OPTION_VALUE");
});

test("the applied text is parsed strictly before it is returned: a value that makes two keys equal (or a __proto__ key) is refused, nothing written", async () => {
  const meta = { id: "t", options: { k: { type: "string", proposals: ["b"], default: "c" } } };
  const dir = template(meta, `{ "image": "debian:12", "containerEnv": { "a\${templateOption:k}": "1", "ab": "2" } }`);
  assert.doesNotThrow(() => applyTemplate(dir)); // control: the default makes "ac"
  assert.equal(refusal(() => applyTemplate(dir, new Map([["k", "b"]]))).code, "JSON_DUPLICATE_KEY");
  const proto = template(meta, `{ "image": "debian:12", "containerEnv": { "\${templateOption:k}": "1" } }`);
  assert.equal(refusal(() => applyTemplate(proto, new Map([["k", "__proto__"]]))).code, "JSON_PROTO_KEY");
  const out = join(root, "dup.json");
  const r = await runCli(["manifest", "apply-template", dir, "--option", "k=b", "--out", out]);
  assert.equal(r.code, 1);
  assert.ok(!existsSync(out));
});

test("property: hostile template files and options end in a typed refusal or a text the strict parser reads, never anything else", () => {
  const flip = (text: string, flips: [number, number][], cut: number | null): Buffer => {
    const b = Buffer.from(text);
    for (const [at, v] of flips) if (b.length > 0) b[at % b.length] = v;
    return cut === null ? b : b.subarray(0, cut % (b.length + 1));
  };
  const bytes = fc.record({
    flips: fc.oneof(fc.constant([] as [number, number][]), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 6 })),
    cut: fc.option(fc.nat(), { freq: 4 }),
  });
  const value = fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom("*/", "\n", '"', "${templateOption:flavour}", "true", "full", "__proto__"));
  const option = fc.oneof(
    { weight: 4, arbitrary: fc.tuple(fc.constantFrom("imageVariant", "flavour", "installZsh", "upgrade"), value) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom("nosuch", "constructor"), value) },
  );
  let refused = 0;
  let applied = 0;
  fc.assert(
    fc.property(bytes, bytes, fc.array(option, { maxLength: 2 }), (m, c, opts) => {
      const dir = join(root, `p${n++}`);
      mkdirSync(join(dir, ".devcontainer"), { recursive: true });
      writeFileSync(join(dir, "devcontainer-template.json"), flip(JSON.stringify(META), m.flips, m.cut));
      writeFileSync(join(dir, ".devcontainer", "devcontainer.json"), flip(CONFIG, c.flips, c.cut));
      try {
        const r = applyTemplate(dir, new Map(opts));
        parseInputText(r.text, "applied"); // what it returns, the strict parser reads
        applied++;
      } catch (e) {
        if (!(e instanceof CairnError)) throw e;
        assert.notEqual(e.code, "INTERNAL");
        refused++;
      }
    }),
    { numRuns: 300, seed: 33_3 },
  );
  assert.ok(applied > 0 && refused > 0, `${applied} applied, ${refused} refused`); // both sides were reached
});
