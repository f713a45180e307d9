import { test } from "node:test";
import assert from "node:assert/strict";
import { cairnDir, type CairnDirKind } from "../../src/core/index.ts";
import { assertCode } from "../helpers/errors.ts";

const noAccountHome = (): string => "";
const accountHome = (): string => "/acct";

test("default locations: one precedence for every kind (CAIRN_KIT, CAIRN_HOME, XDG, HOME, account home)", () => {
  const all = { CAIRN_KIT: "/k", CAIRN_HOME: "/c", XDG_CACHE_HOME: "/xc", XDG_DATA_HOME: "/xd", HOME: "/h" };
  const rows: Array<[CairnDirKind, Record<string, string>, string]> = [
    // CAIRN_KIT names the kit itself, and only the kit
    ["kit", all, "/k"],
    ["store", all, "/c/store"],
    ["runs", all, "/c/runs"],
    ["registry", all, "/c/registry"],
    ["kit", { ...all, CAIRN_KIT: "" }, "/c/kit"],
    // CAIRN_HOME, then XDG (cache for store/kit, data for runs/registry)
    ["store", { ...all, CAIRN_HOME: "" }, "/xc/cairn/store"],
    ["kit", { ...all, CAIRN_KIT: "", CAIRN_HOME: "" }, "/xc/cairn/kit"],
    ["runs", { ...all, CAIRN_HOME: "" }, "/xd/cairn/runs"],
    ["registry", { ...all, CAIRN_HOME: "" }, "/xd/cairn/registry"],
    // then HOME
    ["store", { HOME: "/h" }, "/h/.cache/cairn/store"],
    ["kit", { HOME: "/h" }, "/h/.cache/cairn/kit"],
    ["runs", { HOME: "/h" }, "/h/.local/share/cairn/runs"],
    ["registry", { HOME: "/h" }, "/h/.local/share/cairn/registry"],
    // a relative XDG value is ignored (XDG spec), not resolved against the cwd
    ["store", { XDG_CACHE_HOME: "rel", HOME: "/h" }, "/h/.cache/cairn/store"],
    ["runs", { XDG_DATA_HOME: "rel", HOME: "/h" }, "/h/.local/share/cairn/runs"],
    // relative CAIRN_KIT / CAIRN_HOME are taken from the cwd
    ["kit", { CAIRN_KIT: "k" }, "/cwd/k"],
    ["store", { CAIRN_HOME: "c" }, "/cwd/c/store"],
    // empty counts as unset; no HOME falls back to the account's home
    ["store", { CAIRN_HOME: "", XDG_CACHE_HOME: "", HOME: "" }, "/acct/.cache/cairn/store"],
    ["registry", {}, "/acct/.local/share/cairn/registry"],
  ];
  for (const [kind, env, want] of rows) assert.equal(cairnDir(kind, env, "/cwd", accountHome), want, `${kind} ${JSON.stringify(env)}`);
});

test("default locations: with no home anywhere it is a USAGE error naming the flag, never a relative path; control: HOME set", () => {
  for (const kind of ["store", "kit", "runs", "registry"] as const) {
    assert.ok(cairnDir(kind, { HOME: "/h" }, "/cwd", noAccountHome).startsWith("/h/"), "control");
    const e = assertCode(() => cairnDir(kind, { HOME: "", XDG_CACHE_HOME: "rel", XDG_DATA_HOME: "rel" }, "/cwd", noAccountHome), "USAGE");
    assert.match(e.hint ?? "", new RegExp(`--${kind}`));
  }
});

test("default locations read no global: the same arguments give the same answer whatever process.env says", () => {
  const saved = process.env.CAIRN_HOME;
  process.env.CAIRN_HOME = "/from-process-env";
  try {
    assert.equal(cairnDir("store", { HOME: "/h" }, "/cwd", accountHome), "/h/.cache/cairn/store");
  } finally {
    if (saved === undefined) delete process.env.CAIRN_HOME;
    else process.env.CAIRN_HOME = saved;
  }
});
