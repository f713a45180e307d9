/**
 * The policy and limit models: strict parsers (unknown names and values
 * refused with their JSON pointer), versioned defaults, and coverage checks
 * that fail when a limit or an accepted pax key is added without a test or
 * a classification.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { PAX_KEYS } from "../../src/tree/pax.ts";
import { DEFAULT_LIMITS, LIMIT_NAMES, parseLimits } from "../../src/tree/layer-limits.ts";
import { POLICY_VERSION, STRICT_POLICY, isStrictPolicy, parsePolicy, policyModel } from "../../src/tree/layer-policy.ts";
import { assertCode } from "../helpers/errors.ts";
import { OCI_REFUSALS } from "../oci/fixtures/oci-refusals.ts";
import { TAR_REFUSALS } from "./fixtures/tar-refusals.ts";

describe("policy", () => {
  it("defaults to the strict, versioned profile", () => {
    assert.deepEqual(parsePolicy(undefined), STRICT_POLICY);
    assert.deepEqual(policyModel(STRICT_POLICY), { version: POLICY_VERSION, hardlinks: "refuse", setid: "refuse" });
    assert.ok(isStrictPolicy(parsePolicy({})));
  });
  it("accepts the two named relaxations and records them", () => {
    const p = parsePolicy({ hardlinks: "copy", setid: "strip" });
    assert.deepEqual(policyModel(p), { version: POLICY_VERSION, hardlinks: "copy", setid: "strip" });
    assert.equal(isStrictPolicy(p), false);
  });
  it("names devices, xattrs and platform in the model only when taken, so a policy without them keeps its model (and every identity)", () => {
    const all = parsePolicy({ hardlinks: "copy", setid: "strip", devices: "skip", xattrs: "drop", platform: "config" });
    assert.deepEqual(policyModel(all), { version: POLICY_VERSION, hardlinks: "copy", setid: "strip", devices: "skip", xattrs: "drop", platform: "config" });
    for (const key of ["devices", "xattrs", "platform"] as const) {
      const one = parsePolicy({ [key]: String(all[key]) });
      assert.equal(isStrictPolicy(one), false, key);
      assert.deepEqual(Object.keys(policyModel(one)), ["version", "hardlinks", "setid", key]);
    }
    // control: naming a default changes nothing
    const defaults = parsePolicy({ devices: "refuse", xattrs: "refuse", platform: "refuse" });
    assert.deepEqual(policyModel(defaults), policyModel(STRICT_POLICY));
    assert.ok(isStrictPolicy(defaults));
  });
  it("refuses unknown keys, unknown values and wrong types, naming the field", () => {
    assertCode(() => parsePolicy({ sockets: "allow" }), "MODEL_UNKNOWN_FIELD", "/policy/sockets");
    assertCode(() => parsePolicy({ devices: "allow" }), "MODEL_VALUE", "/policy/devices");
    assertCode(() => parsePolicy({ xattrs: "keep" }), "MODEL_VALUE", "/policy/xattrs");
    assertCode(() => parsePolicy({ platform: "any" }), "MODEL_VALUE", "/policy/platform");
    assertCode(() => parsePolicy({ hardlinks: "symlink" }), "MODEL_VALUE", "/policy/hardlinks");
    assertCode(() => parsePolicy({ setid: true }), "MODEL_TYPE", "/policy/setid");
    assertCode(() => parsePolicy("copy"), "MODEL_TYPE", "/policy");
  });
});

describe("limits", () => {
  it("byte defaults are sized for the store and a root disk, not guest RAM: a 15 GB image fits (issue 31, case 15)", () => {
    assert.ok(DEFAULT_LIMITS.expandedBytes >= 16 * 1024 ** 3, "the uncompressed layers of a CUDA or PyTorch image");
    assert.ok(DEFAULT_LIMITS.compressedBytes >= 15 * 1000 ** 3, "their stored layers");
    assert.ok(DEFAULT_LIMITS.expandedBytes <= 64 * 1024 ** 3, "still a bound: a zip bomb stops at a named limit");
    assert.deepEqual(parseLimits(undefined), DEFAULT_LIMITS);
    for (const n of LIMIT_NAMES) assert.ok(Number.isSafeInteger(DEFAULT_LIMITS[n]) && DEFAULT_LIMITS[n] > 0, n);
  });
  it("a spec may lower or explicitly raise a known limit", () => {
    const l = parseLimits({ entries: 10, expandedBytes: 2 * 1024 ** 3 });
    assert.equal(l.entries, 10);
    assert.equal(l.expandedBytes, 2 * 1024 ** 3);
    assert.equal(l.fileSize, DEFAULT_LIMITS.fileSize);
  });
  it("refuses unknown names and non-positive or non-integer values", () => {
    assertCode(() => parseLimits({ inodes: 5 }), "MODEL_UNKNOWN_FIELD", "/limits/inodes");
    assertCode(() => parseLimits({ entries: 0 }), "MODEL_VALUE", "/limits/entries");
    assertCode(() => parseLimits({ entries: 1.5 }), "MODEL_TYPE", "/limits/entries");
    assertCode(() => parseLimits([]), "MODEL_TYPE", "/limits");
  });
  it("every named limit has a refusal case that names it (fails when a limit is added without one)", () => {
    const tested = new Set<string>();
    for (const c of TAR_REFUSALS) if (c.limit) tested.add(c.limit);
    for (const c of OCI_REFUSALS) if (c.code === "LIMIT_EXCEEDED") tested.add(c.id.split(" ")[1]!);
    assert.deepEqual(
      LIMIT_NAMES.filter((n) => !tested.has(n)),
      [],
    );
  });
});

describe("pax keys", () => {
  it("every accepted pax key is classified as recorded or dropped, with a reason", () => {
    for (const [k, v] of Object.entries(PAX_KEYS)) {
      assert.ok(v.use === "recorded" || v.use === "dropped", k);
      assert.ok(v.why.length > 10, k);
    }
    assert.deepEqual(Object.keys(PAX_KEYS).sort(), ["gid", "gname", "linkpath", "mtime", "path", "size", "uid", "uname"]);
  });
});

describe("limit ceilings", () => {
  it("a limit raised past what one buffer can hold is refused at parse time; raising to the ceiling is accepted (control)", async () => {
    const { LIMIT_CEILINGS } = await import("../../src/tree/layer-limits.ts");
    for (const name of LIMIT_NAMES) {
      const ceiling = LIMIT_CEILINGS[name];
      assert.equal(parseLimits({ [name]: ceiling })[name], ceiling, `${name} at its ceiling`);
      if (ceiling < Number.MAX_SAFE_INTEGER) assertCode(() => parseLimits({ [name]: ceiling + 1 }), "MODEL_VALUE");
    }
    assertCode(() => parseLimits({ ociJsonBytes: Number.MAX_SAFE_INTEGER }), "MODEL_VALUE");
  });
});
