// The capture normalization rule (src/strata/capture-rewrite.ts): the install
// root is found only as a whole path, the streamed scan finds it wherever the
// chunks split it, and a file that changes between scan and write is refused.
import { test } from "node:test";
import assert from "node:assert/strict";
import { sha256 } from "../../src/core/index.ts";
import { checkedContent, prefixOffsets, rewritePrefix, rewrittenContent, scanContent } from "../../src/strata/capture-rewrite.ts";
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

test("the streamed rewrite gives the bytes of the whole-file rewrite at every chunk split, with the size the scan predicts", () => {
  const texts = [
    "#!/opt/env/bin/python3\nprefix=/opt/env\n/opt/env2 and /opt/env-old stay\nPATH=/opt/env/bin:/opt/env/sbin\n/opt/env",
    "/opt/env/opt/env /opt/env",
    "no prefix here at all",
  ];
  for (const to of [M, Buffer.from("/o"), Buffer.from("/opt/e")]) {
    for (const t of texts) {
      const data = Buffer.from(t);
      const want = rewritePrefix(data, P, to) ?? data;
      for (let size = 1; size <= data.length; size++) {
        const scan = scanContent(chunked(data, size), P);
        const c = rewrittenContent(chunked(data, size), scan, P, to, "f");
        const got = Buffer.concat([...c.chunks()]);
        assert.equal(got.toString(), want.toString(), `${t} → ${to}, chunks of ${size}`);
        assert.equal(c.size, want.length, `size, chunks of ${size}`);
      }
    }
  }
  // A source changed after the scan: refused at the end.
  const scan = scanContent(chunked(Buffer.from("#!/opt/env/bin/x\n"), 3), P);
  assertCode(() => [...rewrittenContent(chunked(Buffer.from("#!/opt/env/bin/y\n"), 3), scan, P, M, "f").chunks()], "SOURCE_CHANGED", "f");
});
