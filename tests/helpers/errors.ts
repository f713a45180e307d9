import assert from "node:assert/strict";
import { CairnError, type ErrorCode } from "../../src/core/index.ts";

/** Asserts that `fn` throws a CairnError with `code` (tests assert codes, never messages). */
export function assertCode(fn: () => unknown, code: ErrorCode, path?: string): CairnError {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof CairnError, `expected CairnError ${code}, got ${String(e)}`);
    assert.equal(e.code, code, `expected ${code}, got ${e.code}: ${e.message}`);
    if (path !== undefined) assert.equal(e.path, path);
    return e;
  }
  assert.fail(`expected ${code}, but nothing was thrown`);
}

export async function assertCodeAsync(fn: () => Promise<unknown>, code: ErrorCode, path?: string): Promise<CairnError> {
  try {
    await fn();
  } catch (e) {
    assert.ok(e instanceof CairnError, `expected CairnError ${code}, got ${String(e)}`);
    assert.equal(e.code, code, `expected ${code}, got ${e.code}: ${e.message}`);
    if (path !== undefined) assert.equal(e.path, path);
    return e;
  }
  assert.fail(`expected ${code}, but nothing was thrown`);
}
