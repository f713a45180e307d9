import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { compareBytes, inByteOrder, sortByBytes, sortedRecord } from "../../src/core/index.ts";

test("byte order is UTF-8 byte order, not UTF-16 or locale order", () => {
  // U+E000 (EE 80 80) sorts before U+1F600 (F0 9F 98 80) by bytes; JavaScript's default sort puts it after (the surrogate D83D < E000).
  const astral = "\u{1F600}";
  const privateUse = "\uE000";
  assert.deepEqual([astral, privateUse].sort(compareBytes), [privateUse, astral]);
  assert.deepEqual([astral, privateUse].sort(), [astral, privateUse], "control: the default sort differs, so the test can fail");
  assert.deepEqual(["b", "B", "a", "é", "e"].sort(compareBytes), ["B", "a", "b", "e", "é"]);
  assert.equal(compareBytes("a", "a"), 0);
  assert.ok(compareBytes("a", "ab") < 0, "a prefix sorts first");
});

test("byte order agrees with Buffer.compare of the UTF-8 encodings (property)", () => {
  fc.assert(
    fc.property(fc.string({ unit: "grapheme" }), fc.string({ unit: "grapheme" }), (a, b) => {
      assert.equal(Math.sign(compareBytes(a, b)), Math.sign(Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"))));
      assert.equal(Math.sign(compareBytes(a, b)) + Math.sign(compareBytes(b, a)), 0, "antisymmetric");
    }),
  );
});

test("byte order agrees with Buffer.compare where surrogates decide, lone ones included (property)", () => {
  // units chosen around every boundary the comparator's fast path relies on: ASCII, 2- and 3-byte forms,
  // both surrogate halves (paired and lone, which encode as U+FFFD), U+E000..U+FFFF
  const unit = fc.constantFrom("a", "b", "\u00e9", "\u07ff", "\u0800", "\ud7ff", "\ud800", "\udbff", "\udc00", "\udfff", "\ue000", "\ufffd", "\uffff");
  const str = fc.array(unit, { maxLength: 6 }).map((u) => u.join(""));
  fc.assert(
    fc.property(str, str, (a, b) => {
      assert.equal(Math.sign(compareBytes(a, b)), Math.sign(Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"))));
    }),
    { numRuns: 5000 },
  );
  assert.ok(compareBytes("\uffff", "\ud800\udc00") < 0, "U+FFFF (EF BF BF) sorts before U+10000 (F0 90 80 80), unlike their UTF-16 units");
  assert.ok(compareBytes("\ud800", "\ufffc") > 0 && compareBytes("\ud800", "\ufffe") < 0, "a lone surrogate compares as U+FFFD, its encoding");
});

test("sortByBytes orders as Buffer.compare of the UTF-8 encodings, with and without surrogates in the keys (property)", () => {
  const unit = fc.constantFrom("a", "b", "/", "-", "\u00e9", "\u0800", "\ud7ff", "\ud800", "\udc00", "\ue000", "\uffff", "\u{1F600}");
  const str = fc.array(unit, { maxLength: 5 }).map((u) => u.join(""));
  const byBuffer = (xs: string[]) => [...xs].sort((a, b) => Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8")));
  fc.assert(
    fc.property(fc.array(str, { maxLength: 30 }), (keys) => {
      const items = keys.map((k, i) => ({ k, i }));
      const sorted = sortByBytes(items, (x) => x.k);
      assert.deepEqual(
        sorted.map((x) => x.k),
        byBuffer(keys),
      );
      assert.equal(sorted.length, items.length);
    }),
    { numRuns: 3000 },
  );
  // the engine's own order decides only without surrogates; control: with one, it would be wrong
  const withAstral = ["/\u{1F600}", "/\ue000", "/a"];
  assert.deepEqual(
    sortByBytes(withAstral, (k) => k),
    ["/a", "/\ue000", "/\u{1F600}"],
  );
  assert.deepEqual([...withAstral].sort(), ["/a", "/\u{1F600}", "/\ue000"], "control: UTF-16 order differs here");
  const items = [{ p: "/b" }, { p: "/a" }];
  assert.notEqual(
    sortByBytes(items, (x) => x.p),
    items,
    "a new array; the input is left as it was",
  );
  assert.deepEqual(items, [{ p: "/b" }, { p: "/a" }]);
});

test("inByteOrder holds for strictly ascending keys only", () => {
  assert.equal(inByteOrder(["/", "/a", "/a/b", "/\ue000", "/\u{1F600}"]), true);
  assert.equal(inByteOrder(["/", "/\u{1F600}", "/\ue000"]), false, "UTF-16 order is not byte order");
  assert.equal(inByteOrder(["/a", "/a"]), false, "a repeat is not ascending");
});

test("sortedRecord lists a map's keys in byte order", () => {
  const r = sortedRecord(
    new Map([
      ["\u{1F600}", 1],
      ["\uE000", 2],
      ["a", 3],
    ]),
  );
  assert.deepEqual(Object.keys(r), ["a", "\uE000", "\u{1F600}"]);
});
