/**
 * The version rules `cairn freeze` resolves with, against orders written out
 * by hand from the specifications (PEP 440's own examples, conda's
 * VersionOrder documentation, R's numeric_version), never computed by the
 * code under test.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { comparePep440, parsePep440, parseSpecifier, specifierMatches } from "../../src/strata/freeze/pep440.ts";
import { evaluateMarker, linuxMarkerEnvironment, parseRequirementText } from "../../src/strata/freeze/pep508.ts";
import { compareCondaVersions, condaConstraint } from "../../src/strata/freeze/conda.ts";
import { compareRVersions, cranConstraint } from "../../src/strata/freeze/cran.ts";
import { compatibleTags, linuxPlatforms, parseWheelName } from "../../src/strata/freeze/wheel-tags.ts";
import { assertCode } from "../helpers/errors.ts";

const v = (s: string) => parsePep440(s)!;

test("PEP 440 order: the PEP's own example sequence, each strictly above the one before", () => {
  const order = [
    "1.0.dev456",
    "1.0a1",
    "1.0a2.dev456",
    "1.0a12.dev456",
    "1.0a12",
    "1.0b1.dev456",
    "1.0b2",
    "1.0b2.post345.dev456",
    "1.0b2.post345",
    "1.0rc1.dev456",
    "1.0rc1",
    "1.0",
    "1.0+abc.5",
    "1.0+abc.7",
    "1.0+5",
    "1.0.post456.dev34",
    "1.0.post456",
    "1.0.15",
    "1.1.dev1",
    "1!0.1",
  ];
  for (let i = 1; i < order.length; i++) assert.ok(comparePep440(v(order[i - 1]!), v(order[i]!)) < 0, `${order[i - 1]} < ${order[i]}`);
  assert.equal(comparePep440(v("1.0"), v("1.0.0")), 0, "trailing zeros do not count");
  assert.equal(comparePep440(v("1.0-1"), v("1.0.post1")), 0, "implicit post release");
  assert.equal(parsePep440("1.0~rc1"), undefined, "not PEP 440");
});

test("PEP 440 specifiers: exclusive bounds, compatible release, prefix match, pre-releases only when asked", () => {
  const m = (spec: string, ver: string, pre = false) => specifierMatches(parseSpecifier(spec), v(ver), pre);
  assert.equal(m("<3.0", "3.0rc1", true), false, "<V never admits V's pre-releases");
  assert.equal(m("<3.0rc2", "3.0rc1"), true, "unless V is a pre-release itself (which also asks for them)");
  assert.equal(m(">1.0", "1.0.post1"), false, ">V never admits V's post-releases");
  assert.equal(m(">1.0", "1.0.1"), true);
  assert.equal(m("~=2.2", "2.9"), true);
  assert.equal(m("~=2.2", "3.0"), false);
  assert.equal(m("~=1.4.5", "1.4.9"), true);
  assert.equal(m("~=1.4.5", "1.5.0"), false);
  assert.equal(m("==1.1.*", "1.1.7"), true);
  assert.equal(m("==1.1.*", "1.10"), false);
  assert.equal(m("!=1.1.*", "1.2"), true);
  assert.equal(m("==1.0", "1.0+local"), true, "== without local ignores the candidate's local label");
  assert.equal(m("==1.0+a", "1.0+b"), false);
  assert.equal(m(">=1.0", "2.0b1"), false, "a pre-release is excluded by default");
  assert.equal(m(">=1.0", "2.0b1", true), true);
  assert.equal(m(">=2.0b1", "2.0b3"), true, "a clause that names a pre-release admits them");
  assert.equal(m("", "7.1"), true);
  assertCode(() => parseSpecifier(">=1.0.*"), "MODEL_VALUE");
  assertCode(() => parseSpecifier("~=1"), "MODEL_VALUE");
  assertCode(() => parseSpecifier("1.0"), "MODEL_VALUE");
});

test("PEP 508 requirements and markers, evaluated for the target, not the host", () => {
  const env = linuxMarkerEnvironment("3.12", "aarch64");
  const r = parseRequirementText('Foo_Bar[Socks, fast] (>=1.0, <2) ; python_version >= "3.8" and (platform_machine == "aarch64" or sys_platform == "win32")');
  assert.equal(r.name, "foo-bar");
  assert.deepEqual(r.extras, ["socks", "fast"]);
  assert.equal(evaluateMarker(r.marker!, env), true);
  assert.equal(evaluateMarker(r.marker!, linuxMarkerEnvironment("3.12", "x86_64")), false);
  assert.equal(
    evaluateMarker(parseRequirementText('x; python_version < "3.10"').marker!, env),
    false,
    "3.12 < 3.10 as versions is false (as strings it is true)",
  );
  assert.equal(evaluateMarker(parseRequirementText('x; extra == "Fast_Mode"').marker!, { ...env, extra: "fast-mode" }), true, "extras compare normalized");
  assertCode(() => parseRequirementText("x @ https://example.com/x.whl"), "MODEL_VALUE");
  assertCode(() => parseRequirementText('x; os_nam == "posix"'), "MODEL_VALUE");
  assertCode(() => parseRequirementText('x; (python_version > "3"'), "MODEL_VALUE");
});

test("wheel tags: a cp312 manylinux target ranks its own ABI first and pure wheels last; an unknown libc admits only any", () => {
  const platforms = linuxPlatforms("x86_64", { kind: "glibc", version: "2.36" });
  assert.equal(platforms[0], "manylinux_2_36_x86_64");
  assert.ok(platforms.includes("manylinux2014_x86_64") && platforms.includes("manylinux1_x86_64") && platforms.at(-1) === "linux_x86_64");
  assert.ok(!linuxPlatforms("aarch64", { kind: "glibc", version: "2.36" }).includes("manylinux_2_12_aarch64"), "aarch64 manylinux starts at 2.17");
  assert.equal(linuxPlatforms("x86_64", { kind: "musl", version: "1.2" })[0], "musllinux_1_2_x86_64");
  assert.deepEqual(linuxPlatforms("x86_64", undefined), []);
  const tags = compatibleTags({ python: "3.12", platforms });
  assert.equal(tags[0], "cp312-cp312-manylinux_2_36_x86_64");
  assert.ok(tags.indexOf("cp312-abi3-manylinux_2_17_x86_64") < tags.indexOf("cp311-abi3-manylinux_2_17_x86_64"));
  assert.equal(tags.at(-1), "py30-none-any");
  assert.ok(!tags.includes("cp313-cp313-manylinux_2_17_x86_64") && !tags.includes("cp312-cp312-manylinux_2_38_x86_64"));
  assert.deepEqual(
    compatibleTags({ python: "3.12", platforms: [] }).filter((t) => !t.endsWith("-any")),
    [],
  );
  assert.deepEqual(parseWheelName("numpy-2.0.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl")!.tags, [
    "cp312-cp312-manylinux_2_17_x86_64",
    "cp312-cp312-manylinux2014_x86_64",
  ]);
});

test("conda version order and match specs", () => {
  const order = [
    "0.4",
    "0.4.1.rc",
    "0.4.1.RC",
    "0.4.1",
    "0.5a1",
    "0.5b3",
    "0.5C1",
    "0.5",
    "0.9.6",
    "0.960923",
    "1.0",
    "1.1dev1",
    "1.1a1",
    "1.1.0dev1",
    "1.1.a1",
    "1.1.0rc1",
    "1.1.0",
    "1.1.0post1",
    "1.1post1",
    "1996.07.12",
    "1!0.4.1",
    "1!3.1.1.6",
    "2!0.4.1",
  ];
  for (let i = 1; i < order.length; i++) {
    const c = compareCondaVersions(order[i - 1]!, order[i]!);
    if (order[i - 1]!.toLowerCase() === order[i]!.toLowerCase()) assert.equal(c, 0, `${order[i - 1]} == ${order[i]}`);
    else assert.ok(c < 0, `${order[i - 1]} < ${order[i]}`);
  }
  assert.equal(compareCondaVersions("1.1", "1.1.0"), 0);
  const ok = (spec: string, ver: string, build?: string) => condaConstraint(spec, "request", "").matches(ver, build);
  assert.equal(ok("python >=3.12,<3.13.0a0", "3.12.4"), true);
  assert.equal(ok("python >=3.12,<3.13.0a0", "3.13.0"), false);
  assert.equal(ok("numpy 1.26.*", "1.26.4"), true);
  assert.equal(ok("numpy 1.2*", "1.26.4"), false, "a prefix matches whole components");
  assert.equal(ok("numpy=1.26", "1.26.4"), true);
  assert.equal(ok("numpy 1.26", "1.26.4"), false, "a bare version is that version");
  assert.equal(ok("numpy 1.26|>=2", "2.1"), true);
  assert.equal(ok("python_abi 3.12.* *_cp312", "3.12", "4_cp312"), true);
  assert.equal(ok("python_abi 3.12.* *_cp312", "3.12", "4_cp311"), false);
  assertCode(() => condaConstraint("numpy >=1 ; x", "request", "/p"), "MODEL_VALUE");
});

test("R numeric_version order and CRAN requirements", () => {
  assert.ok(compareRVersions("1.2-3", "1.2.10") < 0);
  assert.ok(compareRVersions("1.10.0", "1.9.9") > 0);
  assert.equal(compareRVersions("1.2-3", "1.2.3"), 0);
  assert.equal(cranConstraint("rlang (>= 1.1.0)", "r", "").matches("1.1.3"), true);
  assert.equal(cranConstraint("rlang (>= 1.1.0)", "r", "").matches("1.0.9"), false);
  assertCode(() => cranConstraint("rlang (~ 1)", "r", "/p"), "MODEL_VALUE");
});
