// The capture normalization rule (src/strata/capture-rewrite.ts): the install
// root is found only as a whole path, the streamed scan finds it wherever the
// chunks split it, and a file that changes between scan and write is refused.
import { test } from "node:test";
import assert from "node:assert/strict";
import { sha256 } from "../../src/core/index.ts";
import { checkedContent, prefixOffsets, rewritePrefix, scanContent } from "../../src/strata/capture-rewrite.ts";
import type { FileContent } from "../../src/tree/index.ts";
import { assertCode } from "../helpers/errors.ts";

const P = Buffer.from("/opt/env");
const M = Buffer.from("/opt/tool/1.0");

test("an occurrence is the prefix as a whole path; longer names and embedded paths are not", () => {
  const cases: [string, number][] = [
    ["#!/opt/env/bin/python3\n", 1],
    ["prefix=/opt/env\n", 1],
    ['root = "/opt/env"', 1],
    ["PATH=/opt/env/bin:/opt/env/sbin", 2],
    ["/opt/env", 1],
    ["/opt/env2/bin", 0],
    ["/opt/env-old/bin", 0],
    ["/opt/env.bak", 0],
    ["/x/opt/env/bin", 0],
    ["a/opt/env", 0],
    ["/opt/environment", 0],
  ];
  for (const [text, n] of cases) assert.equal(prefixOffsets(Buffer.from(text), P).length, n, text);
  assert.equal(rewritePrefix(Buffer.from("#!/opt/env/bin/py /opt/env2\n"), P, M)?.toString(), "#!/opt/tool/1.0/bin/py /opt/env2\n");
  assert.equal(rewritePrefix(Buffer.from("nothing here /opt/env2"), P, M), undefined);
});

/** `data` as a FileContent yielding chunks of `size` bytes. */
function chunked(data: Buffer, size: number): FileContent {
  return {
    size: data.length,
    *chunks() {
      for (let i = 0; i < data.length; i += size) yield data.subarray(i, i + size);
    },
  };
}

test("the streamed scan finds the prefix wherever the chunks split it, and decides the boundary with the next chunk", () => {
  const hit = Buffer.from("xxxxxxxxxx /opt/env/bin yyyyyyyyyy");
  const miss = Buffer.from("xxxxxxxxxx /opt/env2/bin yyyyyyyyy");
  const end = Buffer.from("xxxxxxxxxx /opt/env");
  for (let size = 1; size <= hit.length; size++) {
    assert.equal(scanContent(chunked(hit, size), P).namesPrefix, true, `hit, chunks of ${size}`);
    assert.equal(scanContent(chunked(miss, size), P).namesPrefix, false, `miss, chunks of ${size}`);
    assert.equal(scanContent(chunked(end, size), P).namesPrefix, true, `at the end, chunks of ${size}`);
  }
  const s = scanContent(chunked(Buffer.concat([hit, Buffer.from([0])]), 7), P);
  assert.equal(s.binary, true);
  assert.equal(s.sha256, sha256(Buffer.concat([hit, Buffer.from([0])])));
});

test("a file that changes between the scan and the write is SOURCE_CHANGED (control: the same bytes pass)", () => {
  const data = Buffer.from("#!/opt/env/bin/python\n");
  const scan = scanContent(chunked(data, 4), P);
  assert.deepEqual(Buffer.concat([...checkedContent(chunked(data, 4), scan, "f").chunks()]), data);
  const other = Buffer.from("#!/opt/env/bin/pythoX\n");
  assertCode(() => [...checkedContent(chunked(other, 4), scan, "f").chunks()], "SOURCE_CHANGED", "f");
});
