import assert from "node:assert/strict";
import fc from "fast-check";
import { HpackDecoder, HpackError } from "./hpack.ts";
import {
  HUFFMAN_CODES,
  HUFFMAN_EOS,
  HUFFMAN_LENGTHS,
  huffmanDecode,
} from "./hpack_huffman.ts";

/** Octets from hex; spaces are ignored. */
function hex(text: string): Uint8Array {
  const digits = text.replace(/\s+/g, "");
  const out = new Uint8Array(digits.length / 2);
  for (let i = 0; i < out.length; i++) {
    out[i] = parseInt(digits.slice(2 * i, 2 * i + 2), 16);
  }
  return out;
}

/** Text one character per octet. */
function latin1(octets: Uint8Array): string {
  return Array.from(octets, (o) => String.fromCharCode(o)).join("");
}

/**
 * The test's own encoder: each octet's code, then the shortest padding of
 * ones (RFC 7541 5.2).
 */
function huffmanEncode(octets: Uint8Array): Uint8Array {
  const out: number[] = [];
  let pending = 0; // the last `bits` bits not yet written, below 2^37
  let bits = 0;
  for (const octet of octets) {
    const length = HUFFMAN_LENGTHS[octet] ?? 0;
    pending = pending * 2 ** length + (HUFFMAN_CODES[octet] ?? 0);
    bits += length;
    while (bits >= 8) {
      bits -= 8;
      out.push(Math.floor(pending / 2 ** bits));
      pending %= 2 ** bits;
    }
  }
  if (bits > 0) out.push((pending << (8 - bits)) | (0xff >> bits));
  return Uint8Array.from(out);
}

/** An integer with a 7-bit prefix after `flags` (RFC 7541 5.1). */
function int7(flags: number, value: number): number[] {
  if (value < 127) return [flags | value];
  const out = [flags | 127];
  let rest = value - 127;
  for (; rest >= 128; rest = Math.floor(rest / 128)) out.push(rest % 128 | 128);
  out.push(rest);
  return out;
}

/** A Huffman string literal (H bit set). */
function huffmanLiteral(octets: Uint8Array): number[] {
  const coded = huffmanEncode(octets);
  return [...int7(0x80, coded.length), ...coded];
}

Deno.test("HUFFMAN_CODES: a complete prefix code of 257 symbols, as in RFC 7541", () => {
  assert.equal(HUFFMAN_CODES.length, 257);
  assert.equal(HUFFMAN_LENGTHS.length, 257);
  assert.equal(HUFFMAN_EOS, 256);
  // Kraft's sum is exactly 1: no code is missing or a prefix of another
  // (the module's tree build checks the latter too).
  let kraft = 0;
  HUFFMAN_CODES.forEach((code, symbol) => {
    const length = HUFFMAN_LENGTHS[symbol] ?? 0;
    assert.ok(length >= 5 && length <= 30, `length of ${symbol}`);
    assert.ok(code < 2 ** length, `code of ${symbol} fits ${length} bits`);
    kraft += 2 ** (30 - length);
  });
  assert.equal(kraft, 2 ** 30);
  const known: [number, number, number][] = [
    [0, 0x1ff8, 13],
    [0x30, 0x0, 5], // '0'
    [0x61, 0x3, 5], // 'a'
    [0x7e, 0x1ffd, 13], // '~'
    [0xff, 0x3ffffee, 26],
    [256, 0x3fffffff, 30], // EOS
  ];
  for (const [symbol, code, length] of known) {
    assert.equal(HUFFMAN_CODES[symbol], code, `code of ${symbol}`);
    assert.equal(HUFFMAN_LENGTHS[symbol], length, `length of ${symbol}`);
  }
});

/** The Huffman strings of RFC 7541 C.4 and C.6. */
const RFC_STRINGS: [string, string][] = [
  ["www.example.com", "f1e3 c2e5 f23a 6ba0 ab90 f4ff"],
  ["no-cache", "a8eb 1064 9cbf"],
  ["custom-key", "25a8 49e9 5ba9 7d7f"],
  ["custom-value", "25a8 49e9 5bb8 e8b4 bf"],
  ["302", "6402"],
  ["307", "640e ff"],
  ["private", "aec3 771a 4b"],
  [
    "Mon, 21 Oct 2013 20:13:21 GMT",
    "d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff",
  ],
  [
    "Mon, 21 Oct 2013 20:13:22 GMT",
    "d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff",
  ],
  ["https://www.example.com", "9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3"],
  ["gzip", "9bd9 ab"],
  [
    "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
    "94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5" +
    "291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07",
  ],
  ["", ""],
];

Deno.test("huffmanDecode and the test's encoder agree with RFC 7541 Appendix C", () => {
  for (const [text, coded] of RFC_STRINGS) {
    assert.equal(huffmanDecode(hex(coded)), text, coded);
    const octets = Uint8Array.from(text, (c) => c.charCodeAt(0));
    assert.deepEqual(huffmanEncode(octets), hex(coded), text);
  }
});

Deno.test("huffmanDecode: a part of the array, and bad bounds", () => {
  const coded = hex("00 9bd9ab 00");
  assert.equal(huffmanDecode(coded, 1, 4), "gzip");
  assert.equal(huffmanDecode(coded, 2, 2), "");
  for (const [start, end] of [[-1, 2], [3, 2], [0, 6], [0.5, 2]]) {
    assert.throws(
      () => huffmanDecode(coded, start, end),
      RangeError,
      `${start}..${end}`,
    );
  }
});

Deno.test("huffmanDecode: EOS and bad padding are RangeErrors", () => {
  const cases: [string, RegExp][] = [
    ["ffffffff", /contains EOS \(octet 3\)/], // EOS and 2 bits of padding
    ["fffffffc7f", /contains EOS/], // EOS, then "a"
    ["1fff", /longer than 7 bits/], // "a" and 11 ones
    ["ff", /longer than 7 bits/], // 8 ones only
    ["6402 ff", /longer than 7 bits/], // "302" and 8 ones
    ["18", /not all ones/], // "a" and 000
    ["1d", /not all ones/], // "a" and 101
    ["fe", /not all ones/], // 7 ones and a zero: no symbol
  ];
  for (const [coded, message] of cases) {
    assert.throws(() => huffmanDecode(hex(coded)), message, coded);
  }
});

const octets = fc.oneof(
  fc.uint8Array({ maxLength: 64 }),
  fc.uint8Array({ minLength: 1000, maxLength: 3000 }), // past 1024-octet chunks
);

Deno.test("huffmanDecode: decodes what is encoded, every octet value", () => {
  // Every octet value, 12 times: past the decoder's 1024-octet chunks.
  const all = Uint8Array.from({ length: 256 * 12 }, (_, i) => i % 256);
  assert.equal(huffmanDecode(huffmanEncode(all)), latin1(all));
  fc.assert(
    fc.property(octets, (input) => {
      assert.equal(huffmanDecode(huffmanEncode(input)), latin1(input));
    }),
    { numRuns: 500 },
  );
});

Deno.test("huffmanDecode: arbitrary octets decode to the text that encodes to them, or a RangeError", () => {
  // The padding is at most 7 ones, so a valid string has one encoding.
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 40 }), (input) => {
      let text: string;
      try {
        text = huffmanDecode(input);
      } catch (e) {
        assert.ok(e instanceof RangeError, String(e));
        return;
      }
      const decoded = Uint8Array.from(text, (c) => c.charCodeAt(0));
      assert.deepEqual(huffmanEncode(decoded), input);
    }),
    { numRuns: 3000 },
  );
});

Deno.test("HpackDecoder: Huffman names and values decode to the original octets", () => {
  fc.assert(
    fc.property(
      fc.uint8Array({ minLength: 1, maxLength: 40 }),
      octets,
      (name, value) => {
        const decoder = new HpackDecoder();
        // Literal with incremental indexing, new name, both Huffman; then
        // the entry again, indexed (62) from the dynamic table.
        const block = Uint8Array.from([
          0x40,
          ...huffmanLiteral(name),
          ...huffmanLiteral(value),
          0xbe,
        ]);
        const field: [string, string] = [latin1(name), latin1(value)];
        assert.deepEqual(decoder.decode(block, 1e6), [field, field]);
      },
    ),
    { numRuns: 300 },
  );
});

Deno.test("HpackDecoder: a bad Huffman string is an HpackError with the cause", () => {
  const block = hex("00 81 18 00");
  assert.throws(
    () => new HpackDecoder().decode(block, 1000),
    (e: unknown) => {
      assert.ok(e instanceof HpackError);
      assert.match(e.message, /not all ones/);
      assert.ok(e.cause instanceof RangeError);
      return true;
    },
  );
});
