/**
 * Machine output you can trust (issue 36, item 4): every --json document
 * carries a schema tag, `cairn.cli.<command words joined by "-">/1`, and
 * validates against its JSON Schema under docs/schemas/ (docs/json-output.md).
 * The commands are found by walking the commander tree, so a command that
 * gains --json is covered without this file naming it.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { runCli } from "../helpers/cli.ts";
import { checkDocument, ERROR_TAG, jsonCommands } from "../helpers/json-schemas.ts";

describe("the error document", () => {
  it("control: the check refuses an untagged error document and one with a field its schema does not name", () => {
    const error = { code: "USAGE", message: "m", path: null, hint: null };
    assert.match(checkDocument(JSON.stringify({ error }), ERROR_TAG).problems.join(), /schema is undefined/);
    assert.match(checkDocument(JSON.stringify({ schema: ERROR_TAG, error, extra: 1 }), ERROR_TAG).problems.join(), /additional/);
    assert.match(checkDocument(JSON.stringify({ schema: ERROR_TAG, error: { ...error, code: 7 } }), ERROR_TAG).problems.join(), /code must be string/);
    assert.deepEqual(checkDocument(JSON.stringify({ schema: ERROR_TAG, error }), ERROR_TAG).problems, []);
  });

  it("every command with --json prints a tagged, valid error document when it fails", async () => {
    const commands = await jsonCommands();
    assert.ok(commands.length > 40, `found ${commands.length} commands with --json`);
    for (const path of commands) {
      const r = await runCli([...path, "--json", "--no-such-flag"]);
      assert.equal(r.code, 2, `${path.join(" ")}: ${r.stdout}${r.stderr}`);
      const { doc, problems } = checkDocument(r.stdout, ERROR_TAG);
      assert.deepEqual(problems, [], `${path.join(" ")}: ${r.stdout}`);
      assert.equal((doc.error as { code: string }).code, "USAGE");
    }
  });

  it("a failure inside a command (not a usage error) prints the same document", async () => {
    const r = await runCli(["lock", "id", "/nonexistent/cairn.lock", "--json"]);
    assert.equal(r.code, 1, r.stdout);
    const { doc, problems } = checkDocument(r.stdout, ERROR_TAG);
    assert.deepEqual(problems, []);
    assert.notEqual((doc.error as { code: string }).code, "USAGE");
  });
});
