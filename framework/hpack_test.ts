import assert from "node:assert/strict";
import fc from "fast-check";
import {
  encodeHeaders,
  type HeaderList,
  HpackDecoder,
  HpackError,
} from "./hpack.ts";

/** Octets from hex; spaces are ignored. */
function hex(text: string): Uint8Array {
  const digits = text.replace(/\s+/g, "");
  assert.equal(digits.length % 2, 0, `odd hex: ${text}`);
  const out = new Uint8Array(digits.length / 2);
  for (let i = 0; i < out.length; i++) {
    out[i] = parseInt(digits.slice(2 * i, 2 * i + 2), 16);
  }
  return out;
}

/** An integer with an `n`-bit prefix after `flags` (RFC 7541 5.1). */
function int(flags: number, n: number, value: number): number[] {
  const mask = (1 << n) - 1;
  if (value < mask) return [flags | value];
  const out = [flags | mask];
  let rest = value - mask;
  for (; rest >= 128; rest = Math.floor(rest / 128)) out.push(rest % 128 | 128);
  out.push(rest);
  return out;
}

/** A raw string literal. */
function str(text: string): number[] {
  return [...int(0, 7, text.length), ...[...text].map((c) => c.charCodeAt(0))];
}

/** RFC 7540 6.5.2's size of a header list. */
function listSize(list: HeaderList): number {
  return list.reduce(
    (n, [name, value]) => n + name.length + value.length + 32,
    0,
  );
}

/**
 * The decoder's dynamic table, newest first, read by decoding indexed
 * fields 62, 63, ... until one is past the table (which leaves it as is).
 */
function dynamicTable(decoder: HpackDecoder): HeaderList {
  const table: HeaderList = [];
  for (let index = 62;; index++) {
    try {
      table.push(...decoder.decode(Uint8Array.from(int(0x80, 7, index)), 1e9));
    } catch (e) {
      assert.ok(e instanceof HpackError, String(e));
      assert.match(e.message, new RegExp(`index ${index} beyond`));
      return table;
    }
  }
}

const C3_LISTS: HeaderList[] = [
  [
    [":method", "GET"],
    [":scheme", "http"],
    [":path", "/"],
    [":authority", "www.example.com"],
  ],
  [
    [":method", "GET"],
    [":scheme", "http"],
    [":path", "/"],
    [":authority", "www.example.com"],
    ["cache-control", "no-cache"],
  ],
  [
    [":method", "GET"],
    [":scheme", "https"],
    [":path", "/index.html"],
    [":authority", "www.example.com"],
    ["custom-key", "custom-value"],
  ],
];
const C3_TABLES: HeaderList[] = [
  [[":authority", "www.example.com"]],
  [["cache-control", "no-cache"], [":authority", "www.example.com"]],
  [
    ["custom-key", "custom-value"],
    ["cache-control", "no-cache"],
    [":authority", "www.example.com"],
  ],
];

const DATE_21 = "Mon, 21 Oct 2013 20:13:21 GMT";
const DATE_22 = "Mon, 21 Oct 2013 20:13:22 GMT";
const LOCATION = "https://www.example.com";
const COOKIE = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1";
const C5_LISTS: HeaderList[] = [
  [
    [":status", "302"],
    ["cache-control", "private"],
    ["date", DATE_21],
    ["location", LOCATION],
  ],
  [
    [":status", "307"],
    ["cache-control", "private"],
    ["date", DATE_21],
    ["location", LOCATION],
  ],
  [
    [":status", "200"],
    ["cache-control", "private"],
    ["date", DATE_22],
    ["location", LOCATION],
    ["content-encoding", "gzip"],
    ["set-cookie", COOKIE],
  ],
];
const C5_TABLES: HeaderList[] = [
  [
    ["location", LOCATION],
    ["date", DATE_21],
    ["cache-control", "private"],
    [":status", "302"],
  ],
  [
    [":status", "307"],
    ["location", LOCATION],
    ["date", DATE_21],
    ["cache-control", "private"],
  ],
  [["set-cookie", COOKIE], ["content-encoding", "gzip"], ["date", DATE_22]],
];

/** RFC 7541 Appendix C: blocks decoded in order by one decoder. */
const EXAMPLES: {
  name: string;
  tableSize: number;
  blocks: { hex: string; list: HeaderList; table: HeaderList }[];
}[] = [
  {
    name: "C.2.1 literal with indexing",
    tableSize: 4096,
    blocks: [{
      hex: "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572",
      list: [["custom-key", "custom-header"]],
      table: [["custom-key", "custom-header"]],
    }],
  },
  {
    name: "C.2.2 literal without indexing",
    tableSize: 4096,
    blocks: [{
      hex: "040c 2f73 616d 706c 652f 7061 7468",
      list: [[":path", "/sample/path"]],
      table: [],
    }],
  },
  {
    name: "C.2.3 literal never indexed",
    tableSize: 4096,
    blocks: [{
      hex: "1008 7061 7373 776f 7264 0673 6563 7265 74",
      list: [["password", "secret"]],
      table: [],
    }],
  },
  {
    name: "C.2.4 indexed",
    tableSize: 4096,
    blocks: [{ hex: "82", list: [[":method", "GET"]], table: [] }],
  },
  {
    name: "C.3 requests without Huffman",
    tableSize: 4096,
    blocks: [
      "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
      "8286 84be 5808 6e6f 2d63 6163 6865",
      "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
    ].map((hex, i) => ({
      hex,
      list: C3_LISTS[i] ?? [],
      table: C3_TABLES[i] ?? [],
    })),
  },
  {
    name: "C.4 requests with Huffman",
    tableSize: 4096,
    blocks: [
      "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
      "8286 84be 5886 a8eb 1064 9cbf",
      "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
    ].map((hex, i) => ({
      hex,
      list: C3_LISTS[i] ?? [],
      table: C3_TABLES[i] ?? [],
    })),
  },
  {
    name: "C.5 responses without Huffman, 256-octet table",
    tableSize: 256,
    blocks: [
      "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420" +
      "3230 3133 2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77" +
      "7777 2e65 7861 6d70 6c65 2e63 6f6d",
      "4803 3330 37c1 c0bf",
      "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32" +
      "3220 474d 54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a" +
      "584f 5157 454f 5049 5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33" +
      "3630 303b 2076 6572 7369 6f6e 3d31",
    ].map((hex, i) => ({
      hex,
      list: C5_LISTS[i] ?? [],
      table: C5_TABLES[i] ?? [],
    })),
  },
  {
    name: "C.6 responses with Huffman, 256-octet table",
    tableSize: 256,
    blocks: [
      "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81" +
      "66e0 82a6 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
      "4883 640e ffc1 c0bf",
      "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a" +
      "839b d9ab 77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36" +
      "72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07",
    ].map((hex, i) => ({
      hex,
      list: C5_LISTS[i] ?? [],
      table: C5_TABLES[i] ?? [],
    })),
  },
];

Deno.test("HpackDecoder: the examples of RFC 7541 Appendix C", () => {
  for (const { name, tableSize, blocks } of EXAMPLES) {
    const decoder = new HpackDecoder(tableSize);
    blocks.forEach(({ hex: text, list, table }, i) => {
      assert.deepEqual(
        decoder.decode(hex(text), 16384),
        list,
        `${name} #${i + 1}`,
      );
      assert.deepEqual(dynamicTable(decoder), table, `${name} #${i + 1} table`);
    });
  }
});

Deno.test("HpackDecoder: raw octets are latin1, not UTF-8", () => {
  const block = hex("00 0178 04 e9 80 9f ff");
  assert.deepEqual(new HpackDecoder().decode(block, 1000), [
    ["x", "\u00e9\u0080\u009f\u00ff"],
  ]);
});

Deno.test("HpackDecoder: limits hold at their bounds", () => {
  // :method GET is 7 + 3 + 32 = 42 octets.
  assert.deepEqual(new HpackDecoder().decode(hex("82"), 42), [[
    ":method",
    "GET",
  ]]);
  assert.deepEqual(new HpackDecoder().decode(hex("0001610162"), 34), [[
    "a",
    "b",
  ]]);
  // Two size updates (to 0, then to the maximum 4096) empty the table.
  const decoder = new HpackDecoder();
  decoder.decode(hex("4001610162"), 1000);
  assert.deepEqual(decoder.decode(hex("20 3fe11f 82"), 1000), [[
    ":method",
    "GET",
  ]]);
  assert.deepEqual(dynamicTable(decoder), []);
  // The largest integer, 2^32 - 1, is an index past the tables, not an overflow.
  assert.throws(
    () =>
      new HpackDecoder().decode(
        Uint8Array.from(int(0x80, 7, 2 ** 32 - 1)),
        1000,
      ),
    /index 4294967295 beyond/,
  );
});

Deno.test("HpackDecoder: a size update evicts; an entry larger than the table empties it", () => {
  const decoder = new HpackDecoder(100);
  // Two 34-octet entries fit in 100; a size update to 40 keeps the newest.
  decoder.decode(hex("4001610162 4001630164"), 1000);
  assert.deepEqual(dynamicTable(decoder), [["c", "d"], ["a", "b"]]);
  decoder.decode(hex("3f09"), 1000);
  assert.deepEqual(dynamicTable(decoder), [["c", "d"]]);
  // Back to 100, then a 101-octet entry: the table is emptied.
  decoder.decode(
    Uint8Array.from([
      ...int(0x20, 5, 100),
      0x40,
      ...str("x"),
      ...str("y".repeat(68)),
    ]),
    1000,
  );
  assert.deepEqual(dynamicTable(decoder), []);
  // With a table size of 0 nothing is kept, and nothing breaks.
  const none = new HpackDecoder(0);
  assert.deepEqual(none.decode(hex("4001610162"), 1000), [["a", "b"]]);
  assert.deepEqual(dynamicTable(none), []);
});

Deno.test("HpackDecoder: many entries through a small table keep only the newest", () => {
  const decoder = new HpackDecoder(34 * 3);
  for (let i = 0; i < 500; i++) {
    const v = String.fromCharCode(0x30 + (i % 10));
    decoder.decode(Uint8Array.from([0x40, ...str("k"), ...str(v)]), 1000);
  }
  assert.deepEqual(dynamicTable(decoder), [["k", "9"], ["k", "8"], ["k", "7"]]);
});

/** The bomb: one ~4 KiB table entry, then 100 octets that each repeat it. */
function bomb(trailer: number[]): Uint8Array {
  return Uint8Array.from([
    0x40,
    ...str("x"),
    ...str("a".repeat(4000)),
    ...new Array<number>(100).fill(0xbe),
    ...trailer,
  ]);
}

/** Malformed or over-limit blocks, each an HpackError with its message. */
const ERRORS: {
  name: string;
  block: Uint8Array;
  message: RegExp;
  maxListSize?: number;
  tableSize?: number;
}[] = [
  { name: "index 0", block: hex("80"), message: /index 0/ },
  {
    name: "index past the static table",
    block: hex("be"),
    message: /index 62 beyond the tables \(61 static \+ 0 dynamic/,
  },
  {
    name: "index past the dynamic table",
    block: hex("4001610162 bf"),
    message: /index 63 beyond the tables \(61 static \+ 1 dynamic/,
  },
  {
    name: "literal's name index past the tables",
    block: hex("0f2f 0161"),
    message: /index 62 beyond/,
  },
  {
    name: "index far past the tables",
    block: Uint8Array.from(int(0x80, 7, 2 ** 31)),
    message: /index 2147483648 beyond/,
  },
  {
    name: "truncated integer: no continuation",
    block: hex("ff"),
    message: /integer truncated/,
  },
  {
    name: "truncated integer: continuation flag at the end",
    block: hex("ff80"),
    message: /integer truncated/,
  },
  {
    name: "truncated integer: the value's length missing",
    block: hex("400161"),
    message: /integer truncated/,
  },
  {
    name: "integer of 2^32",
    block: Uint8Array.from(int(0x80, 7, 2 ** 32)),
    message: /integer 4294967296 above 4294967295/,
  },
  {
    name: "integer overflow in a string length",
    block: hex("00 7f ffffffff0f"),
    message: /integer \d+ above/,
  },
  {
    name: "integer with 6 continuation octets",
    block: hex("ff 808080808000"),
    message: /longer than 5 continuation octets/,
  },
  {
    name: "truncated raw string",
    block: hex("0005 61"),
    message: /string of 5 octets truncated at 1/,
  },
  {
    name: "truncated Huffman string",
    block: hex("0081"),
    message: /string of 1 octets truncated at 0/,
  },
  {
    name: "string length just below the overflow bound, truncated",
    block: hex("00 7f ffffffff0e"),
    message: /string of 4026531966 octets truncated/,
  },
  {
    name: "Huffman padding of 11 bits",
    block: hex("0082 1fff"),
    message: /padding longer than 7 bits/,
  },
  {
    name: "Huffman padding of 8 bits alone",
    block: hex("0081 ff"),
    message: /padding longer than 7 bits/,
  },
  {
    name: "Huffman padding of zero bits",
    block: hex("0081 18"),
    message: /padding that is not all ones/,
  },
  {
    name: "Huffman padding not all ones",
    block: hex("0081 1d"),
    message: /padding that is not all ones/,
  },
  {
    name: "EOS in a Huffman string",
    block: hex("0084 ffffffff"),
    message: /EOS/,
  },
  {
    name: "EOS in a Huffman value, before other symbols",
    block: hex("0001 61 85 fffffffc7f"), // EOS, then "a"
    message: /EOS/,
  },
  {
    name: "size update above the maximum",
    block: hex("3fe21f"),
    message: /size update to 4097, above the 4096/,
  },
  {
    name: "size update above a smaller maximum",
    block: Uint8Array.from(int(0x20, 5, 101)),
    tableSize: 100,
    message: /size update to 101, above the 100/,
  },
  {
    name: "size update after a field",
    block: hex("82 20"),
    message: /after a field/,
  },
  {
    name: "three size updates",
    block: hex("20 20 20"),
    message: /more than 2/,
  },
  {
    name: "list over the limit by an indexed field",
    block: hex("82"),
    maxListSize: 41,
    message: /list size above 41/,
  },
  {
    name: "list over the limit by a literal's value",
    block: Uint8Array.from([0x00, ...str("a"), ...str("b".repeat(10))]),
    maxListSize: 42,
    message: /list size above 42/,
  },
  {
    name: "list over the limit by a literal's name",
    block: Uint8Array.from([0x00, ...str("a".repeat(100)), ...str("")]),
    maxListSize: 100,
    message: /list size above 100/,
  },
  {
    // Refused before the value is read: the missing value is not reached.
    name: "list over the limit by a raw name, before its value",
    block: Uint8Array.from([0x00, ...str("a".repeat(100))]),
    maxListSize: 100,
    message: /list size above 100/,
  },
  {
    name: "list over the limit by a Huffman name, before its value",
    block: hex("00 8c f1e3c2e5f23a6ba0ab90f4ff"), // "www.example.com"
    maxListSize: 46,
    message: /list size above 46/,
  },
  {
    name: "list over the limit by a Huffman value",
    block: hex("0001 61 8c f1e3c2e5f23a6ba0ab90f4ff"), // "www.example.com"
    maxListSize: 47,
    message: /list size above 47/,
  },
  {
    // It stops at the fourth copy: the index 0 after the copies is not reached.
    name: "HPACK bomb",
    block: bomb([0x80]),
    maxListSize: 16384,
    message: /list size above 16384/,
  },
];

Deno.test("HpackDecoder: malformed and over-limit blocks are HpackErrors", () => {
  for (const { name, block, message, maxListSize, tableSize } of ERRORS) {
    const decoder = new HpackDecoder(tableSize);
    assert.throws(
      () => decoder.decode(block, maxListSize ?? 16384),
      (e: unknown) => {
        assert.ok(e instanceof HpackError, `${name}: ${e}`);
        assert.match(e.message, message, name);
        return true;
      },
      name,
    );
  }
});

Deno.test("HpackDecoder: the bomb is refused quickly, and only over the limit", () => {
  const started = performance.now();
  for (let i = 0; i < 100; i++) {
    assert.throws(
      () => new HpackDecoder().decode(bomb([]), 16384),
      /list size/,
    );
  }
  const ms = performance.now() - started;
  assert.ok(ms < 1000, `100 bombs took ${ms} ms`);
  // Within the limit the same block decodes to 101 fields.
  assert.equal(new HpackDecoder().decode(bomb([]), 101 * 4033).length, 101);
});

Deno.test("HpackDecoder: every prefix of the examples is decoded or an HpackError", () => {
  let errors = 0;
  for (const { tableSize, blocks } of EXAMPLES) {
    for (const { hex: text } of blocks) {
      const block = hex(text);
      for (let end = 0; end < block.length; end++) {
        try {
          new HpackDecoder(tableSize).decode(block.subarray(0, end), 16384);
        } catch (e) {
          assert.ok(e instanceof HpackError, `${text} to ${end}: ${e}`);
          errors++;
        }
      }
    }
  }
  assert.ok(errors > 100, `${errors} errors`);
});

Deno.test("HpackDecoder: refuses a bad maxTableSize or maxListSize", () => {
  for (const bad of [-1, NaN]) {
    assert.throws(() => new HpackDecoder().decode(hex("82"), bad), RangeError);
  }
  for (const bad of [-1, 1.5, NaN, 2 ** 32]) {
    assert.throws(() => new HpackDecoder(bad), RangeError, String(bad));
  }
});

Deno.test("encodeHeaders: indexed on an exact static match, the static name index otherwise", () => {
  const cases: [HeaderList, string][] = [
    [[[":status", "200"]], "88"],
    [[[":status", "500"], [":method", "GET"]], "8e 82"],
    [[[":status", "201"]], "08 03 323031"],
    [
      [["content-type", "application/json"]],
      "0f10 10 6170706c69636174696f6e2f6a736f6e",
    ],
    [[["www-authenticate", ""]], "bd"],
    [[["www-authenticate", "x"]], "0f2e 01 78"],
    [[["x-custom", "v"]], "00 08 782d637573746f6d 01 76"],
    [[["x", "é"]], "00 0178 01e9"],
    [[], ""],
  ];
  for (const [list, want] of cases) {
    assert.deepEqual(encodeHeaders(list), hex(want), JSON.stringify(list));
  }
  // Lengths of 127 and more: 0x7f, then 7 bits per octet, low bits first.
  const long = encodeHeaders([["x", "y".repeat(200)]]);
  assert.deepEqual([...long.subarray(0, 5)], [0x00, 0x01, 0x78, 0x7f, 0x49]);
  assert.equal(long.length, 5 + 200);
  const longer = encodeHeaders([["x", "y".repeat(300)]]);
  assert.deepEqual([...longer.subarray(0, 6)], [
    0x00,
    0x01,
    0x78,
    0x7f,
    0xad,
    0x01,
  ]);
  assert.equal(longer.length, 6 + 300);
});

Deno.test("encodeHeaders: refuses characters above U+00FF", () => {
  assert.throws(
    () => encodeHeaders([["x", "\u0100"]]),
    /"x" has a character above U\+00FF: U\+0100/,
  );
  assert.throws(() => encodeHeaders([["\u20ac", ""]]), RangeError);
});

const TOKEN = "abcdefghijklmnopqrstuvwxyz0123456789!#$%&'*+-.^_`|~";
const PRINTABLE = Array.from(
  { length: 0x7f - 0x20 },
  (_, i) => String.fromCharCode(0x20 + i),
);
const STATIC_PAIRS: [string, string][] = [
  [":status", "200"],
  [":status", "204"],
  [":status", "404"],
  [":method", "GET"],
  [":path", "/"],
  [":authority", ""],
  ["accept-encoding", "gzip, deflate"],
  ["content-type", ""],
];
const STATIC_NAMES = [
  ":status",
  ":path",
  "content-type",
  "content-length",
  "date",
  "server",
  "www-authenticate",
];

const char = fc.constantFrom(...PRINTABLE);
const value = fc.oneof(
  fc.string({ unit: char, maxLength: 40 }),
  fc.string({ unit: char, maxLength: 1000 }),
);
const header: fc.Arbitrary<[string, string]> = fc.oneof(
  fc.tuple(
    fc.string({ unit: fc.constantFrom(...TOKEN), minLength: 1, maxLength: 30 }),
    value,
  ),
  fc.tuple(fc.constantFrom(...STATIC_NAMES), value),
  fc.constantFrom(...STATIC_PAIRS),
);

Deno.test("encodeHeaders: decodes back to the same list", () => {
  const decoder = new HpackDecoder();
  fc.assert(
    fc.property(fc.array(header, { maxLength: 30 }), (list) => {
      const block = encodeHeaders(list);
      assert.deepEqual(decoder.decode(block, listSize(list)), list);
      // No dynamic table: the decoder's stays empty.
      assert.deepEqual(dynamicTable(decoder), []);
    }),
    { numRuns: 500 },
  );
});

/** Pieces that random blocks are made of: valid representations and noise. */
const piece: fc.Arbitrary<readonly number[]> = fc.oneof(
  fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 6 }),
  fc.integer({ min: 0, max: 80 }).map((i) => int(0x80, 7, i)),
  fc.tuple(
    fc.constantFrom(0x40, 0x10, 0x00),
    fc.integer({ min: 0, max: 70 }),
    value,
  )
    .map(([flags, index, v]) => [
      ...int(flags, flags === 0x40 ? 6 : 4, index),
      ...(index === 0 ? str("n") : []),
      ...str(v),
    ]),
  fc.integer({ min: 0, max: 5000 }).map((size) => int(0x20, 5, size)),
  fc.constantFrom([0x00, 0x81, 0x1f, 0x83, 0xf1, 0xe3, 0xc2], [
    0x7f,
    0xff,
    0xff,
    0xff,
    0xff,
    0x0f,
  ]),
);

Deno.test("HpackDecoder: arbitrary octets are a bounded list or an HpackError", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 4096 }),
      fc.integer({ min: 0, max: 2000 }),
      fc.array(
        fc.oneof(
          fc.uint8Array({ maxLength: 64 }),
          fc.array(piece, { maxLength: 12 }).map((ps) =>
            Uint8Array.from(ps.flat())
          ),
        ),
        { minLength: 1, maxLength: 4 },
      ),
      (tableSize, maxListSize, blocks) => {
        const decoder = new HpackDecoder(tableSize);
        for (const block of blocks) {
          let list: HeaderList;
          try {
            list = decoder.decode(block, maxListSize);
          } catch (e) {
            assert.ok(e instanceof HpackError, String(e));
            return; // The connection is closed.
          }
          assert.ok(listSize(list) <= maxListSize);
        }
      },
    ),
    { numRuns: 3000 },
  );
});
