// The manifest core's field rules (src/manifest/core.ts) beyond normalize.test.ts:
// variable names, users, userEnvProbe, workspaceMount and workspaceFolder, the
// substitutions inside mount strings and mount objects, the kinds and values of
// excluded fields and the walk over their keys and items, mount collisions with
// the workspace mount, the read-only mount list and the excluded list. Each
// refusal asserts its code and path (and that it is the only issue), with an
// accepted control beside it. Written to kill StrykerJS survivors
// (bench/mutation/README.md).
import { test } from "node:test";
import assert from "node:assert/strict";
import type { CairnError } from "../../src/core/index.ts";
import { buildCore } from "../../src/manifest/core.ts";
import { assertCode } from "../helpers/errors.ts";
import { PINNED_IMAGE } from "./helpers.ts";

const img = { image: PINNED_IMAGE };

/** Refused with exactly one issue, `code` at `path`. */
function refused(v: unknown, code: CairnError["code"], path: string): void {
  const e = assertCode(() => buildCore(v), code, path);
  assert.deepEqual(
    (e.issues ?? []).map((i) => [i.path, i.code]),
    [[path, code]],
  );
}

test("variable names: empty, or with a NUL, or renamed by a substitution are refused at the name, once; control: a literal name", () => {
  assert.deepEqual(buildCore({ ...img, containerEnv: { A: "x" } }).core.containerEnv, { A: "x" }, "control");
  refused({ ...img, containerEnv: { "": "x" } }, "MODEL_VALUE", "/containerEnv/");
  refused({ ...img, containerEnv: { "A\u0000": "x" } }, "MODEL_VALUE", "/containerEnv/A\u0000");
  refused(
    { ...img, workspaceFolder: "/w", containerEnv: { "${containerWorkspaceFolder}": "x" } },
    "MANIFEST_REFUSED",
    "/containerEnv/${containerWorkspaceFolder}",
  );
});

test("users: empty, or with whitespace, are refused; control: a plain name", () => {
  assert.equal(buildCore({ ...img, remoteUser: "vscode" }).core.remoteUser, "vscode", "control");
  refused({ ...img, remoteUser: "" }, "MODEL_VALUE", "/remoteUser");
  refused({ ...img, remoteUser: "a b" }, "MODEL_VALUE", "/remoteUser");
  refused({ ...img, containerUser: "a\tb" }, "MODEL_VALUE", "/containerUser");
});

test("userEnvProbe outside its four values is MODEL_VALUE; control: each value is kept", () => {
  for (const p of ["none", "loginShell", "loginInteractiveShell", "interactiveShell"])
    assert.equal(buildCore({ ...img, userEnvProbe: p }).extension.userEnvProbe, p);
  refused({ ...img, userEnvProbe: "bogus" }, "MODEL_VALUE", "/userEnvProbe");
});

test("workspaceMount is a mount string: an object is MODEL_TYPE; control: the string", () => {
  assert.equal(buildCore({ ...img, workspaceMount: "source=/srv/src,target=/ws,type=bind" }).extension.workspaceMount?.target, "/ws", "control");
  refused({ ...img, workspaceMount: { type: "bind", source: "/srv/src", target: "/ws" } }, "MODEL_TYPE", "/workspaceMount");
});

test("workspaceFolder: the root stays /, a trailing slash is dropped", () => {
  assert.equal(buildCore({ ...img, workspaceFolder: "/" }).extension.workspaceFolder, "/");
  assert.equal(buildCore({ ...img, workspaceFolder: "/x/" }).extension.workspaceFolder, "/x");
  assert.equal(buildCore({ ...img, workspaceFolder: "/x" }).extension.workspaceFolder, "/x");
});

test("substitutions inside a mount string and inside a mount object's fields are resolved before the mount is read", () => {
  const expected = [{ source: "vol", target: "/w/c", kind: "volume" }];
  assert.deepEqual(buildCore({ ...img, workspaceFolder: "/w", mounts: ["source=vol,target=${containerWorkspaceFolder}/c,type=volume"] }).core.mounts, expected);
  assert.deepEqual(
    buildCore({ ...img, workspaceFolder: "/w", mounts: [{ type: "volume", source: "vol", target: "${containerWorkspaceFolder}/c" }] }).core.mounts,
    expected,
  );
  refused({ ...img, mounts: [{ type: "bind", source: "${localEnv:HOME}", target: "/x" }] }, "MANIFEST_REFUSED", "/mounts/0/source");
});

test("excluded fields: the kinds the spec allows (null, arrays, objects, integers told apart), enum values; control: the allowed kind", () => {
  refused({ ...img, customizations: null }, "MODEL_TYPE", "/customizations");
  refused({ ...img, customizations: [] }, "MODEL_TYPE", "/customizations");
  refused({ ...img, name: 5 }, "MODEL_TYPE", "/name");
  refused({ ...img, appPort: 5.5 }, "MODEL_TYPE", "/appPort");
  assert.deepEqual(buildCore({ ...img, appPort: 5 }).excluded, ["appPort"], "control: an integer");
  assert.deepEqual(buildCore({ ...img, customizations: {} }).excluded, ["customizations"], "control: an object");
  refused({ ...img, shutdownAction: "bogus" }, "MODEL_VALUE", "/shutdownAction");
  assert.deepEqual(buildCore({ ...img, shutdownAction: "none" }).excluded, ["shutdownAction"], "control");
});

test("excluded fields are walked: items of a list, keys and nested values of an object; host substitutions pass, NULs and string limits do not", () => {
  refused({ ...img, forwardPorts: ["x\u0000"] }, "MODEL_VALUE", "/forwardPorts/0");
  refused({ ...img, customizations: { "a\u0000": 1 } }, "MODEL_VALUE", "/customizations/a\u0000");
  refused({ ...img, customizations: { a: { b: "x\u0000" } } }, "MODEL_VALUE", "/customizations/a/b");
  refused({ ...img, customizations: { a: { b: "x".repeat(65537) } } }, "LIMIT_EXCEEDED", "/customizations/a/b");
  assert.deepEqual(buildCore({ ...img, customizations: { "${localEnv:HOME}": { b: "${localEnv:USER}" } }, forwardPorts: ["${localEnv:X}"] }).excluded, [
    "customizations",
    "forwardPorts",
  ]);
});

test("a mount sharing its target with the workspace mount is MANIFEST_COLLISION; control: distinct targets", () => {
  const ws = "source=/srv/src,target=/workspaces/x,type=bind";
  assert.equal(buildCore({ ...img, workspaceMount: ws, mounts: ["source=cache,target=/cache,type=volume"] }).core.mounts.length, 1, "control");
  refused({ ...img, workspaceMount: ws, mounts: ["source=cache,target=/workspaces/x,type=volume"] }, "MANIFEST_COLLISION", "/mounts");
});

test("read_only_mounts lists the targets of the read-only mounts only; excluded names are sorted; none present is empty", () => {
  const b = buildCore({ ...img, mounts: ["source=/srv/a,target=/b,type=bind,readonly", "type=tmpfs,target=/a"] });
  assert.deepEqual(b.extension.read_only_mounts, ["/b"]);
  assert.deepEqual(buildCore({ name: "n", $schema: "s", ...img }).excluded, ["$schema", "name"]);
  assert.deepEqual(buildCore(img).excluded, []);
});

test("a top level that is not an object is MODEL_TYPE at the root; control: an object", () => {
  assertCode(() => buildCore([]), "MODEL_TYPE", "");
  assertCode(() => buildCore("x"), "MODEL_TYPE", "");
  assert.equal(buildCore(img).core.image, PINNED_IMAGE);
});
