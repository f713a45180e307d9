import { test } from "node:test";
import assert from "node:assert/strict";
import { launchFromOci, launchIdentity, makeLaunch, parseUser } from "../../src/workload/launch.ts";
import { assertCode } from "../helpers/errors.ts";

const ok = { argv: ["/bin/app"], env: ["B=2", "A=1"], workdir: "/", user: "1000:1000" };

test("a launch is built and its env sorted by name bytes; identity is stable", () => {
  const l = makeLaunch(ok, "/x");
  assert.deepEqual(l.env, ["A=1", "B=2"]);
  assert.equal(launchIdentity(l), launchIdentity(makeLaunch({ ...ok, env: ["A=1", "B=2"] }, "/x")));
  assert.notEqual(launchIdentity(l), launchIdentity(makeLaunch({ ...ok, argv: ["/bin/app", "x"] }, "/x")));
  assert.notEqual(launchIdentity(l), launchIdentity(makeLaunch({ ...ok, workdir: "/tmp" }, "/x")));
  assert.notEqual(launchIdentity(l), launchIdentity(makeLaunch({ ...ok, user: "1000:1001" }, "/x")));
  assert.notEqual(launchIdentity(l), launchIdentity(makeLaunch({ ...ok, env: ["A=1", "B=3"] }, "/x")));
});

test("users: numeric nonzero uid:gid only", () => {
  assert.deepEqual(parseUser("1:2", "/u"), { uid: 1, gid: 2 });
  for (const bad of ["root", "0:0", "0:1", "1:0", "1000", "1000:", "01:1", "1:1:1", "4294967295:1", " 1:1"]) {
    assertCode(() => parseUser(bad, "/u"), "LAUNCH_INVALID");
  }
});

test("refusals: empty argv, relative program, NUL, bad env, duplicate env, relative workdir", () => {
  assertCode(() => makeLaunch({ ...ok, argv: [] }, "/x"), "LAUNCH_INVALID");
  assertCode(() => makeLaunch({ ...ok, argv: ["app"] }, "/x"), "LAUNCH_INVALID");
  assertCode(() => makeLaunch({ ...ok, argv: ["/a\0b"] }, "/x"), "LAUNCH_INVALID");
  assertCode(() => makeLaunch({ ...ok, env: ["NOVALUE"] }, "/x"), "LAUNCH_INVALID");
  assertCode(() => makeLaunch({ ...ok, env: ["=v"] }, "/x"), "LAUNCH_INVALID");
  const dup = assertCode(() => makeLaunch({ ...ok, env: ["S=secret-one", "S=secret-two"] }, "/x"), "LAUNCH_INVALID");
  assert.ok(!dup.message.includes("secret"), "an env value must never appear in a message");
  assertCode(() => makeLaunch({ ...ok, workdir: "work" }, "/x"), "LAUNCH_INVALID");
  assertCode(() => makeLaunch({ ...ok, workdir: "/a/../b" }, "/x"), "LAUNCH_INVALID");
  assertCode(() => makeLaunch({ ...ok, argv: ["/a", "x".repeat(200 * 1024)] }, "/x"), "LIMIT_EXCEEDED");
});

test("OCI: Entrypoint+Cmd, WorkingDir default /, User numeric and 65534:65534 when missing", () => {
  const l = launchFromOci({ entrypoint: ["/bin/app"], cmd: ["--x"], env: ["PATH=/bin"], workingDir: undefined, user: "10:20" });
  assert.deepEqual(l.argv, ["/bin/app", "--x"]);
  assert.equal(l.workdir, "/");
  for (const user of [undefined, ""]) {
    const l = launchFromOci({ entrypoint: ["/bin/app"], cmd: undefined, env: undefined, workingDir: undefined, user });
    assert.deepEqual([l.uid, l.gid], [65534, 65534], `User ${JSON.stringify(user)}`);
  }
  assertCode(() => launchFromOci({ entrypoint: ["/bin/app"], cmd: undefined, env: undefined, workingDir: undefined, user: "0:0" }), "LAUNCH_INVALID");
  assertCode(() => launchFromOci({ entrypoint: ["/bin/app"], cmd: undefined, env: undefined, workingDir: undefined, user: "nobody" }), "LAUNCH_INVALID");
  assertCode(() => launchFromOci({ entrypoint: undefined, cmd: ["sh", "-c", "x"], env: undefined, workingDir: undefined, user: "1:1" }), "LAUNCH_INVALID");
});
