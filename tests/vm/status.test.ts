// A launch failure fails the run unless the spec expected exactly that stage
// for that invocation; other assertions passing must not hide it.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CairnError } from "../../src/core/index.ts";
import { checkAssertions, parseScenario, runStatus, type DecodedProtocol, type NormalizedEvent } from "../../src/vm/index.ts";

function decoded(events: NormalizedEvent[]): DecodedProtocol {
  return { events, streams: new Map([[1, { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0) }]]), records: events.length, frames: 0, bytes: 0 };
}

const failed = decoded([{ invocation: 1, event: "launch-failure", stage: "credentials", errno: 1 } as NormalizedEvent]);

describe("run status with launch failures", () => {
  it("an unexpected launch failure is launch-failed even when every other assertion passes", () => {
    const results = checkAssertions([{ invocation: 1, stdoutLines: [] }], failed);
    assert.ok(
      results.every((r) => r.ok),
      "the stdout assertion itself passes",
    );
    assert.equal(runStatus(failed.events, results), "launch-failed");
    assert.equal(runStatus(failed.events, []), "launch-failed");
  });

  it("an expected launch failure at that stage passes (control); at another stage it fails the assertion", () => {
    const ok = checkAssertions(parseScenario({ steps: [{ action: "start" }], expect: [{ "launch-failure": "credentials" }] }).expect, failed);
    assert.equal(runStatus(failed.events, ok), "passed");
    const wrong = checkAssertions(parseScenario({ steps: [{ action: "start" }], expect: [{ "launch-failure": "exec" }] }).expect, failed);
    assert.equal(runStatus(failed.events, wrong), "assertions-failed");
  });

  it("an unknown stage name in the spec is refused", () => {
    assert.throws(
      () => parseScenario({ steps: [{ action: "start" }], expect: [{ "launch-failure": "nope" }] }),
      (e: unknown) => e instanceof CairnError && e.issues.some((i) => i.code === "MODEL_VALUE" && i.path === "/run/expect/0/launch-failure"),
    );
  });
});
