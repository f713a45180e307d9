// Property tests (fast-check): permutations and formatting keep the address;
// edits to an identity field change it; documents round-trip.
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { parseJsonText, type JsonModel } from "../../src/core/index.ts";
import { manifestText, parseManifest } from "../../src/manifest/document.ts";
import { ingestDevcontainer, type EnvManifest } from "../../src/manifest/env-manifest.ts";
import { addr } from "./helpers.ts";

type Decl = { [k: string]: JsonModel };

const seg = fc.stringMatching(/^[a-z0-9]{1,8}$/);
const hex = fc.stringMatching(/^[0-9a-f]{64}$/);
const safeText = fc.string({ maxLength: 24 }).filter((s) => !s.includes("${") && !s.includes("\u0000"));
const image = fc.oneof(
  fc.tuple(seg, seg, hex).map(([a, b, h]) => `registry.example/${a}/${b}@sha256:${h}`),
  fc.tuple(seg, seg, seg).map(([a, b, t]) => `registry.example/${a}/${b}:${t}`),
);
const featureId = fc.oneof(
  fc.tuple(seg, seg, seg).map(([a, b, t]) => `ghcr.io/${a}/${b}:${t}`),
  fc.tuple(seg, seg, hex).map(([a, b, h]) => `ghcr.io/${a}/${b}@sha256:${h}`),
);
const options = fc.dictionary(fc.stringMatching(/^[a-zA-Z_]{1,8}$/), fc.oneof(safeText, fc.boolean()), { maxKeys: 4 });
const features = fc.uniqueArray(fc.tuple(featureId, options), { maxLength: 5, selector: ([id]) => id }).map((es) => Object.fromEntries(es));
const env = fc.dictionary(fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,8}$/), safeText, { maxKeys: 6 });
const mountFor = (target: string): fc.Arbitrary<JsonModel> =>
  fc.oneof(
    fc.tuple(seg, fc.boolean()).map(([v, ro]) => `type=volume,source=vol${v},target=${target}${ro ? ",readonly" : ""}`),
    seg.map((v) => ({ type: "bind", source: `/srv/${v}`, target })),
    fc.constant(`type=tmpfs,target=${target}`),
  );
const mounts = fc.uniqueArray(seg, { maxLength: 4 }).chain((ts) => fc.tuple(...ts.map((t) => mountFor(`/m/${t}`))));
const declaration: fc.Arbitrary<Decl> = fc.record(
  { image, features, containerEnv: env, mounts, remoteUser: seg, name: safeText },
  { requiredKeys: ["image"] },
) as fc.Arbitrary<Decl>;

/** Applies a permutation given by random keys. */
function permute<T>(xs: readonly T[], keys: readonly number[]): T[] {
  return xs
    .map((x, i) => ({ x, k: keys[i % Math.max(keys.length, 1)] ?? 0, i }))
    .sort((a, b) => a.k - b.k || a.i - b.i)
    .map((e) => e.x);
}

function reorderObject(o: JsonModel, keys: readonly number[]): JsonModel {
  if (typeof o !== "object" || o === null || Array.isArray(o)) return o;
  return Object.fromEntries(permute(Object.entries(o), keys).map(([k, v]) => [k, reorderObject(v as JsonModel, keys)]));
}

/** Reorders every object's keys and the feature, env and mount lists. */
function shuffled(d: Decl, keys: readonly number[]): Decl {
  const out = reorderObject(d, keys) as Decl;
  if (Array.isArray(d.mounts)) out.mounts = permute(d.mounts, keys);
  return out;
}

/** The same model written with comments, odd whitespace and trailing commas. */
function noisyText(v: JsonModel, n: number): string {
  const pad = [" ", "\n", "\t", "  \r\n", " /* c */ ", "// line\n"][n % 6]!;
  if (Array.isArray(v)) return `[${pad}${v.map((x) => noisyText(x, n + 1)).join(`,${pad}`)}${v.length > 0 && n % 2 === 0 ? "," : ""}${pad}]`;
  if (typeof v === "object" && v !== null) {
    const entries = Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}${pad}:${pad}${noisyText(x as JsonModel, n + 1)}`);
    return `{${pad}${entries.join(`,${pad}`)}${entries.length > 0 && n % 2 === 1 ? "," : ""}${pad}}`;
  }
  return JSON.stringify(v);
}

test("property: any permutation of keys, features, options, env entries and mounts keeps the address", () => {
  fc.assert(
    fc.property(declaration, fc.array(fc.integer(), { minLength: 1, maxLength: 16 }), (d, keys) => {
      assert.equal(addr(shuffled(d, keys)), addr(d));
    }),
    { numRuns: 200 },
  );
});

test("property: whitespace, comments and trailing commas keep the address", () => {
  fc.assert(
    fc.property(declaration, fc.nat(20), (d, n) => {
      assert.equal(addr(parseJsonText(noisyText(d, n), { jsonc: true })), addr(d));
    }),
    { numRuns: 150 },
  );
});

test("property: feature id case does not matter", () => {
  fc.assert(
    fc.property(declaration, (d) => {
      const f = d.features as { [k: string]: JsonModel } | undefined;
      if (!f) return;
      const upper = Object.fromEntries(Object.entries(f).map(([k, v]) => [k.replace(/^ghcr\.io/, "GHCR.IO"), v]));
      assert.equal(addr({ ...d, features: upper }), addr(d));
    }),
    { numRuns: 100 },
  );
});

test("property: an edit to an identity field changes the address", () => {
  const edit = fc.oneof(
    fc.constant("image"),
    fc.constant("env-add"),
    fc.constant("env-change"),
    fc.constant("feature-add"),
    fc.constant("option-change"),
    fc.constant("mount-add"),
    fc.constant("user"),
  );
  fc.assert(
    fc.property(declaration, edit, safeText, (d, kind, text) => {
      const e: Decl = JSON.parse(JSON.stringify(d));
      const env = (e.containerEnv ?? {}) as { [k: string]: JsonModel };
      const feats = (e.features ?? {}) as { [k: string]: { [k: string]: JsonModel } };
      switch (kind) {
        case "image":
          e.image = `${String(d.image)}x`.replace(/@sha256:([0-9a-f]{64})x$/, (_, h: string) => `@sha256:${h[0] === "0" ? "1" : "0"}${h.slice(1)}`);
          break;
        case "env-add":
          e.containerEnv = { ...env, ZZ_NEW: text };
          if ("ZZ_NEW" in env && env.ZZ_NEW === text) return;
          break;
        case "env-change": {
          const k = Object.keys(env)[0];
          if (k === undefined) return;
          e.containerEnv = { ...env, [k]: `${String(env[k])}!` };
          break;
        }
        case "feature-add":
          e.features = { ...feats, "ghcr.io/zz/new:1": {} };
          if ("ghcr.io/zz/new:1" in feats) return;
          break;
        case "option-change": {
          const k = Object.keys(feats)[0];
          if (k === undefined) return;
          e.features = { ...feats, [k]: { ...feats[k], zz_opt: true } };
          if (feats[k]!.zz_opt === true) return;
          break;
        }
        case "mount-add":
          e.mounts = [...((e.mounts ?? []) as JsonModel[]), "type=tmpfs,target=/zz-new"];
          break;
        case "user":
          e.remoteUser = `${String(d.remoteUser ?? "")}u`;
          break;
      }
      assert.notEqual(addr(e), addr(d), kind);
    }),
    { numRuns: 300 },
  );
});

test("property: a manifest document round-trips and re-verifies its address and labels", () => {
  fc.assert(
    fc.property(declaration, (d) => {
      const m = ingestDevcontainer(d).manifest;
      assert.deepEqual(parseManifest(parseJsonText(manifestText(m))), m);
    }),
    { numRuns: 150 },
  );
});

test("property (robustness): any JSON under any known key is refused with a typed error or ingested into a document that round-trips", async () => {
  const { CairnError } = await import("../../src/core/index.ts");
  const { FIELD_SCOPE } = await import("../../src/manifest/scope.ts");
  const keys = [...Object.keys(FIELD_SCOPE), "unknownField"];
  const value = fc.oneof(
    fc.jsonValue({ maxDepth: 3 }),
    fc.constantFrom("${localEnv:X}", "type=bind,source=/,target=/h", "source=vol1,target=/v,type=volume", `ubuntu@sha256:${"a".repeat(64)}`, "/abs/path"),
  ) as fc.Arbitrary<JsonModel>;
  const decl = fc.dictionary(fc.constantFrom(...keys), value, { maxKeys: 6 }).map((d) => ({ image: "ubuntu:24.04", ...d }));
  let accepted = 0;
  fc.assert(
    fc.property(decl, (d) => {
      let m: EnvManifest;
      try {
        m = ingestDevcontainer(JSON.parse(JSON.stringify(d)) as JsonModel).manifest;
      } catch (e) {
        assert.ok(e instanceof CairnError, `untyped error: ${String(e)}`);
        return;
      }
      accepted++;
      assert.deepEqual(parseManifest(parseJsonText(manifestText(m))), m);
    }),
    { numRuns: 400 },
  );
  assert.ok(accepted > 0, "no random input was accepted; the property checked nothing on the accepting side");
});
