import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  compareVersions,
  compareVersionValues,
  versionHasPrefix,
  parseCapability,
  parseRequirement,
  requirementString,
  satisfies,
  satisfyingProviders,
} from "../../src/strata/index.ts";
import { assertCode } from "../helpers/errors.ts";

test("version order: numeric segments compare as numbers, not strings", () => {
  assert.equal(compareVersions("3.9", "3.10"), -1);
  assert.equal(compareVersions("3.10", "3.9"), 1);
  assert.equal(compareVersions("10.0", "9.99.99"), 1);
  assert.equal(compareVersions("1.2", "1.2"), 0);
  assert.equal(compareVersions("99999999999999999999.1", "99999999999999999998.9"), 1, "no precision loss on long numbers");
});

test("version order: the stated rule for non-numeric segments and lengths", () => {
  assert.equal(compareVersions("1.0", "1.rc"), -1, "a numeric segment sorts before a non-numeric one");
  assert.equal(compareVersions("1.alpha", "1.beta"), -1, "non-numeric segments compare by bytes");
  assert.equal(compareVersions("1.B", "1.a"), -1, "byte order, not locale order (uppercase first)");
  assert.equal(compareVersions("3.12", "3.12.0"), -1, "the shorter version is lower when shared segments are equal");
  assert.equal(compareVersionValues("2026.03", "2026.3"), 0, "leading zeros are numerically equal");
  assert.equal(compareVersions("2026.03", "2026.3"), -1, "…and the raw bytes make the order total");
});

test("version order is a total order (property)", () => {
  const seg = fc.oneof(fc.nat({ max: 200 }).map(String), fc.constantFrom("a", "b", "rc1", "01", "0", "Z"));
  const ver = fc.array(seg, { minLength: 1, maxLength: 4 }).map((s) => s.join("."));
  fc.assert(
    fc.property(ver, ver, ver, (a, b, c) => {
      assert.equal(compareVersions(a, b) + compareVersions(b, a), 0, "antisymmetric");
      if (compareVersions(a, b) === 0) assert.equal(a, b);
      if (compareVersions(a, b) <= 0 && compareVersions(b, c) <= 0) assert.ok(compareVersions(a, c) <= 0);
    }),
    { numRuns: 500 },
  );
});

test("version prefix is segment-wise", () => {
  assert.ok(versionHasPrefix("3.12.4", "3.12"));
  assert.ok(versionHasPrefix("3.12.4", "3"));
  assert.ok(versionHasPrefix("3.12.4", ""));
  assert.ok(!versionHasPrefix("3.120", "3.12"), "3.12 is not a prefix of 3.120");
  assert.ok(!versionHasPrefix("3.1", "3.12"));
  assert.ok(!versionHasPrefix("3", "3.0"));
});

test("capability satisfaction: min inclusive, max exclusive", () => {
  const r = parseRequirement("python>=3.11,<3.13");
  assert.deepEqual(r, { name: "python", min: "3.11", max: "3.13" });
  assert.equal(requirementString(r), "python>=3.11,<3.13");
  assert.ok(satisfies({ name: "python", version: "3.11" }, r), "min is inclusive");
  assert.ok(satisfies({ name: "python", version: "3.12.9" }, r));
  assert.ok(!satisfies({ name: "python", version: "3.13" }, r), "max is exclusive");
  assert.ok(!satisfies({ name: "python", version: "3.10.14" }, r));
  assert.ok(!satisfies({ name: "pypy", version: "3.12" }, r), "the name must match exactly");
  assert.ok(satisfies({ name: "python", version: "0.1" }, parseRequirement("python")), "a bare name accepts any version");
  assert.ok(satisfies({ name: "x", version: "9" }, parseRequirement("x>=2")));
  assert.ok(!satisfies({ name: "x", version: "2" }, parseRequirement("x<2")));
});

test("any satisfying provider is enough, not only the first with the right name", () => {
  const r = parseRequirement("python>=3");
  const providers = satisfyingProviders(r, [
    { provider: "old", capability: { name: "python", version: "2.7" } },
    { provider: "new", capability: { name: "python", version: "3.12" } },
  ]);
  assert.deepEqual(providers, ["new"]);
});

test("malformed capabilities and requirements are refused; control parses", () => {
  assert.deepEqual(parseCapability("glibc@2.36"), { name: "glibc", version: "2.36" });
  for (const bad of ["glibc", "@1", "Glibc@2", "glibc@", "glibc@2..3", 7]) assertCode(() => parseCapability(bad), "MODEL_VALUE");
  for (const bad of ["python>=", "python>3", "python<3,>=2", "python>=3,<3", "python>=4,<3", "py thon", ""])
    assertCode(() => parseRequirement(bad), "MODEL_VALUE");
});
