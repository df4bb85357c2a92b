import assert from "node:assert/strict";
import fc from "fast-check";
import { closestNames, editDistance } from "./closest_names.ts";

Deno.test("editDistance: table", () => {
  const rows: [string, string, number][] = [
    ["", "", 0],
    ["", "abc", 3],
    ["node042", "node042", 0],
    ["nod042", "node042", 1], // a letter left out
    ["node0042", "node042", 1], // one too many
    ["node043", "node042", 1], // one wrong
    ["node024", "node042", 1], // two swapped
    ["ndoe042", "node042", 1],
    ["compute-7", "node042", 8],
    ["abc", "ca", 3], // the restricted distance: no edit between a swap's letters
  ];
  for (const [a, b, d] of rows) {
    assert.equal(editDistance(a, b), d, `${a} ${b}`);
    assert.equal(editDistance(b, a), d, `${b} ${a}`);
  }
});

Deno.test("closestNames: table", () => {
  const hosts = ["node042", "node043", "node142", "compute-7", "nova-z"];
  const rows: [string, string[], string[]][] = [
    ["nod042", hosts, ["node042"]], // the closest only, not node043 (2)
    ["node024", hosts, ["node042"]],
    ["node42", ["node042", "node420", "zzz"], ["node042", "node420"]],
    ["node044", hosts, ["node042", "node043"]], // equally close: both, sorted
    ["compute7", hosts, ["compute-7"]],
    ["nodd043", hosts, ["node043"]],
    ["nod", hosts, []], // 4 edits from nova-z: too far for 3 letters
    ["gpu-host-17", hosts, []], // nothing close: no guess
    ["nod042", [], []],
    ["node042", ["node042", "node043"], ["node043"]], // never itself
    ["ab", ["ba", "abc", "xyz"], ["abc", "ba"]],
    ["n1", ["n2", "n3", "n4", "n5"], ["n2", "n3", "n4"]], // at most 3
  ];
  for (const [name, candidates, want] of rows) {
    assert.deepEqual(closestNames(name, candidates), want, name);
  }
  assert.deepEqual(closestNames("nod042", hosts, 1), ["node042"]);
});

Deno.test("closestNames: a name one edit off an existing one is suggested (property)", () => {
  const host = fc.stringMatching(/^[a-z][a-z0-9-]{3,12}$/);
  fc.assert(fc.property(
    host,
    fc.array(host, { maxLength: 20 }),
    fc.nat(),
    fc.constantFrom("drop", "swap", "double"),
    (meant, others, at, edit) => {
      const i = at % meant.length;
      const typo = edit === "drop"
        ? meant.slice(0, i) + meant.slice(i + 1)
        : edit === "double"
        ? meant.slice(0, i) + (meant[i] ?? "") + meant.slice(i)
        : meant.slice(0, i) + (meant[i + 1] ?? "") + (meant[i] ?? "") +
          meant.slice(i + 2);
      fc.pre(typo !== meant && !others.includes(typo));
      const got = closestNames(typo, [...others, meant]);
      // one edit away, so the closest are one edit away: meant among them
      // (unless three others one edit away sort before it)
      assert.ok(got.length > 0 && got.length <= 3, `${typo} -> ${got}`);
      assert.ok(got.every((g) => editDistance(typo, g) === 1), `${got}`);
      assert.ok(
        got.includes(meant) ||
          (got.length === 3 && got.every((g) => g < meant)),
        `${typo} -> ${got}`,
      );
    },
  ));
});
