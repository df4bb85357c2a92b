/**
 * HPACK (RFC 7541), the header compression of HTTP/2: a decoder for the
 * header blocks of requests (static and dynamic table, Huffman strings) and
 * an encoder for the headers of responses (which uses neither).
 *
 * It exists because the admission webhook serves HTTP/2 itself over
 * `node:tls`: Deno 2.9's `node:http2` crashed under hostile load, and
 * `Deno.serve` has no header or handshake timeouts. Requests come from Go's
 * `net/http` client and from hostile clients, so the decoder trusts nothing:
 * integers are bounded, lengths are checked against the block, the dynamic
 * table cannot outgrow the size we advertise, and the decoded list stops at
 * the caller's limit as soon as it passes it (an "HPACK bomb" repeats one
 * indexed octet that stands for a 4 KiB table entry). Any of these is an
 * {@linkcode HpackError}, which the connection answers with
 * COMPRESSION_ERROR; a truncated block is one too, never a `RangeError` or
 * `TypeError`.
 *
 * Header octets are text one character per octet (latin1), not UTF-8. The
 * decoder does not judge names and values (upper case, pseudo-header order,
 * forbidden characters): that is RFC 7540 8.1.2, the HTTP/2 layer's part.
 *
 * @example
 * ```ts
 * import { encodeHeaders, HpackDecoder } from "./hpack.ts";
 * const block = encodeHeaders([[":status", "200"], ["content-type", "application/json"]]);
 * const list = new HpackDecoder().decode(block, 16384);
 * console.assert(list[1]?.[1] === "application/json");
 * ```
 *
 * @module
 */

import { huffmanDecode } from "./hpack_huffman.ts";

/** A header field list: names lower-case as sent, in order. */
export type HeaderList = Array<[name: string, value: string]>;

/**
 * Malformed or over-limit input: the HTTP/2 connection answers
 * COMPRESSION_ERROR (and closes: the dynamic table is then unusable).
 *
 * @example
 * ```ts
 * import { HpackDecoder, HpackError } from "./hpack.ts";
 * try {
 *   new HpackDecoder().decode(new Uint8Array([0x80]), 16384); // index 0
 * } catch (e) {
 *   console.assert(e instanceof HpackError);
 * }
 * ```
 */
export class HpackError extends Error {
  /** Creates an error with the message (and cause) given. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "HpackError";
  }
}

/** The default SETTINGS_HEADER_TABLE_SIZE (RFC 7540 6.5.2). */
export const DEFAULT_HEADER_TABLE_SIZE = 4096;

/** What a field adds to a table's or list's size besides its octets. */
const ENTRY_OVERHEAD = 32;
/** The largest integer a block may carry. */
const MAX_INTEGER = 2 ** 32 - 1;
/** At most this many continuation octets after an integer's prefix. */
const MAX_CONTINUATIONS = 5;

/** RFC 7541 Appendix A; index `i` (1-based) is `STATIC_TABLE[i - 1]`. */
const STATIC_TABLE: readonly (readonly [string, string])[] = [
  [":authority", ""],
  [":method", "GET"],
  [":method", "POST"],
  [":path", "/"],
  [":path", "/index.html"],
  [":scheme", "http"],
  [":scheme", "https"],
  [":status", "200"],
  [":status", "204"],
  [":status", "206"],
  [":status", "304"],
  [":status", "400"],
  [":status", "404"],
  [":status", "500"],
  ["accept-charset", ""],
  ["accept-encoding", "gzip, deflate"],
  ["accept-language", ""],
  ["accept-ranges", ""],
  ["accept", ""],
  ["access-control-allow-origin", ""],
  ["age", ""],
  ["allow", ""],
  ["authorization", ""],
  ["cache-control", ""],
  ["content-disposition", ""],
  ["content-encoding", ""],
  ["content-language", ""],
  ["content-length", ""],
  ["content-location", ""],
  ["content-range", ""],
  ["content-type", ""],
  ["cookie", ""],
  ["date", ""],
  ["etag", ""],
  ["expect", ""],
  ["expires", ""],
  ["from", ""],
  ["host", ""],
  ["if-match", ""],
  ["if-modified-since", ""],
  ["if-none-match", ""],
  ["if-range", ""],
  ["if-unmodified-since", ""],
  ["last-modified", ""],
  ["link", ""],
  ["location", ""],
  ["max-forwards", ""],
  ["proxy-authenticate", ""],
  ["proxy-authorization", ""],
  ["range", ""],
  ["referer", ""],
  ["refresh", ""],
  ["retry-after", ""],
  ["server", ""],
  ["set-cookie", ""],
  ["strict-transport-security", ""],
  ["transfer-encoding", ""],
  ["user-agent", ""],
  ["vary", ""],
  ["via", ""],
  ["www-authenticate", ""],
];

/** For the encoder: a static name's first index and its exact matches. */
const STATIC_BY_NAME = new Map<
  string,
  { index: number; values: Map<string, number> }
>();
STATIC_TABLE.forEach(([name, value], i) => {
  let entry = STATIC_BY_NAME.get(name);
  if (entry === undefined) {
    entry = { index: i + 1, values: new Map() };
    STATIC_BY_NAME.set(name, entry);
  }
  entry.values.set(value, i + 1);
});

/**
 * The dynamic table (RFC 7541 2.3.2, 4): entries oldest first from
 * `#oldest`, evicted oldest first so their sizes (octets + 32) stay within
 * the current maximum. Evicted slots are dropped in batches, so adding and
 * evicting cost O(1) amortised.
 */
class DynamicTable {
  #names: string[] = [];
  #values: string[] = [];
  /** Where the oldest entry is; slots before it are evicted. */
  #oldest = 0;
  #size = 0;
  #maxSize: number;

  constructor(maxSize: number) {
    this.#maxSize = maxSize;
  }

  get length(): number {
    return this.#names.length - this.#oldest;
  }

  /** The name of entry `i`, 0 the newest; `i` must be below `length`. */
  name(i: number): string {
    return this.#names[this.#names.length - 1 - i] ?? "";
  }

  /** The value of entry `i`, 0 the newest; `i` must be below `length`. */
  value(i: number): string {
    return this.#values[this.#values.length - 1 - i] ?? "";
  }

  /** Adds an entry; one larger than the maximum empties the table (4.4). */
  add(name: string, value: string): void {
    const size = name.length + value.length + ENTRY_OVERHEAD;
    if (size > this.#maxSize) {
      this.#evictTo(0);
      return;
    }
    this.#evictTo(this.#maxSize - size);
    this.#names.push(name);
    this.#values.push(value);
    this.#size += size;
  }

  /** A dynamic table size update (4.3), evicting down to `maxSize`. */
  resize(maxSize: number): void {
    this.#maxSize = maxSize;
    this.#evictTo(maxSize);
  }

  #evictTo(size: number): void {
    while (this.#size > size) {
      const name = this.#names[this.#oldest] ?? "";
      const value = this.#values[this.#oldest] ?? "";
      this.#size -= name.length + value.length + ENTRY_OVERHEAD;
      this.#names[this.#oldest] = "";
      this.#values[this.#oldest] = "";
      this.#oldest++;
    }
    if (this.#oldest > 64 && this.#oldest * 2 > this.#names.length) {
      this.#names = this.#names.slice(this.#oldest);
      this.#values = this.#values.slice(this.#oldest);
      this.#oldest = 0;
    }
  }
}

/**
 * Decodes the header blocks of one HTTP/2 connection, in order: the
 * dynamic table carries over from block to block. After an
 * {@linkcode HpackError} the table is in an undefined state, as the
 * connection is closed with COMPRESSION_ERROR.
 *
 * @example
 * ```ts
 * import { HpackDecoder } from "./hpack.ts";
 * const decoder = new HpackDecoder();
 * // RFC 7541 C.2.4: index 2 of the static table.
 * const list = decoder.decode(new Uint8Array([0x82]), 16384);
 * console.assert(list[0]?.[0] === ":method" && list[0]?.[1] === "GET");
 * ```
 */
export class HpackDecoder {
  readonly #maxTableSize: number;
  readonly #table: DynamicTable;
  /** The block being decoded and the position in it. */
  #block: Uint8Array = new Uint8Array(0);
  #pos = 0;

  /** maxTableSize: the SETTINGS_HEADER_TABLE_SIZE we advertise (default 4096). */
  constructor(maxTableSize: number = DEFAULT_HEADER_TABLE_SIZE) {
    if (
      !Number.isInteger(maxTableSize) || maxTableSize < 0 ||
      maxTableSize > MAX_INTEGER
    ) {
      throw new RangeError(
        `maxTableSize must be an integer in 0..${MAX_INTEGER}, got ${maxTableSize}`,
      );
    }
    this.#maxTableSize = maxTableSize;
    this.#table = new DynamicTable(maxTableSize);
  }

  /**
   * Decodes one complete header block (HEADERS + CONTINUATION payloads joined).
   * Throws HpackError on malformed input, and as soon as the decoded list's size
   * (RFC 7540 6.5.2: sum of name + value octets + 32 per field) exceeds maxListSize
   * (an "HPACK bomb": one indexed byte can expand to a 4 KiB table entry).
   *
   * @throws {HpackError} malformed, truncated or over-limit input.
   * @throws {RangeError} if `maxListSize` is negative or NaN.
   */
  decode(block: Uint8Array, maxListSize: number): HeaderList {
    if (!(maxListSize >= 0)) {
      throw new RangeError(`maxListSize must be >= 0, got ${maxListSize}`);
    }
    this.#block = block;
    this.#pos = 0;
    try {
      return this.#decodeBlock(maxListSize);
    } finally {
      this.#block = new Uint8Array(0);
    }
  }

  #decodeBlock(maxListSize: number): HeaderList {
    const list: HeaderList = [];
    const block = this.#block;
    let size = 0;
    let sizeUpdates = 0;
    while (this.#pos < block.length) {
      const first = block[this.#pos] ?? 0;
      let name: string;
      let value: string;
      if (first & 0x80) {
        // 6.1 Indexed Header Field.
        const index = this.#integer(7);
        if (index === 0) throw new HpackError("indexed field with index 0");
        name = this.#name(index);
        value = this.#value(index);
      } else if ((first & 0xe0) === 0x20) {
        // 6.3 Dynamic Table Size Update.
        if (list.length > 0) {
          throw new HpackError("dynamic table size update after a field");
        }
        if (++sizeUpdates > 2) {
          throw new HpackError("more than 2 dynamic table size updates");
        }
        const max = this.#integer(5);
        if (max > this.#maxTableSize) {
          throw new HpackError(
            `dynamic table size update to ${max}, above the ${this.#maxTableSize} advertised`,
          );
        }
        this.#table.resize(max);
        continue;
      } else {
        // 6.2 Literal Header Field: with incremental indexing (01), without
        // indexing (0000) or never indexed (0001).
        const indexing = (first & 0x40) !== 0;
        const index = this.#integer(indexing ? 6 : 4);
        const budget = maxListSize - size - ENTRY_OVERHEAD;
        name = index === 0
          ? this.#string(budget, maxListSize)
          : this.#name(index);
        value = this.#string(budget - name.length, maxListSize);
        if (indexing) this.#table.add(name, value);
      }
      size += name.length + value.length + ENTRY_OVERHEAD;
      if (size > maxListSize) throw listTooLarge(maxListSize);
      list.push([name, value]);
    }
    return list;
  }

  /** An integer with an `n`-bit prefix (RFC 7541 5.1). */
  #integer(n: number): number {
    const mask = (1 << n) - 1;
    let value = this.#octet("integer") & mask;
    if (value < mask) return value;
    let multiplier = 1;
    for (let i = 0; i < MAX_CONTINUATIONS; i++) {
      const octet = this.#octet("integer");
      value += (octet & 0x7f) * multiplier;
      if ((octet & 0x80) === 0) {
        if (value > MAX_INTEGER) {
          throw new HpackError(`integer ${value} above ${MAX_INTEGER}`);
        }
        return value;
      }
      multiplier *= 128;
    }
    throw new HpackError(
      `integer longer than ${MAX_CONTINUATIONS} continuation octets`,
    );
  }

  /**
   * A string literal (RFC 7541 5.2) of at most `budget` characters, which
   * would otherwise take the list past `maxListSize`.
   */
  #string(budget: number, maxListSize: number): string {
    const huffman = ((this.#block[this.#pos] ?? 0) & 0x80) !== 0;
    const length = this.#integer(7);
    const start = this.#pos;
    if (length > this.#block.length - start) {
      throw new HpackError(
        `string of ${length} octets truncated at ${this.#block.length - start}`,
      );
    }
    this.#pos += length;
    if (!huffman) {
      if (length > budget) throw listTooLarge(maxListSize);
      return latin1(this.#block, start, start + length);
    }
    let text: string;
    try {
      text = huffmanDecode(this.#block, start, start + length);
    } catch (e) {
      throw new HpackError(e instanceof Error ? e.message : String(e), {
        cause: e,
      });
    }
    if (text.length > budget) throw listTooLarge(maxListSize);
    return text;
  }

  /** The name of the field at `index` (> 0) of the tables. */
  #name(index: number): string {
    const entry = STATIC_TABLE[index - 1];
    if (entry !== undefined) return entry[0];
    return this.#table.name(this.#dynamicIndex(index));
  }

  /** The value of the field at `index` (> 0) of the tables. */
  #value(index: number): string {
    const entry = STATIC_TABLE[index - 1];
    if (entry !== undefined) return entry[1];
    return this.#table.value(this.#dynamicIndex(index));
  }

  #dynamicIndex(index: number): number {
    const i = index - STATIC_TABLE.length - 1;
    if (i >= this.#table.length) {
      throw new HpackError(
        `index ${index} beyond the tables (${STATIC_TABLE.length} static + ${this.#table.length} dynamic entries)`,
      );
    }
    return i;
  }

  #octet(what: string): number {
    const octet = this.#block[this.#pos];
    if (octet === undefined) {
      throw new HpackError(`${what} truncated at the end of the block`);
    }
    this.#pos++;
    return octet;
  }
}

function listTooLarge(maxListSize: number): HpackError {
  return new HpackError(`header list size above ${maxListSize} octets`);
}

/** Octets as text, one character each (not UTF-8: header octets are latin1). */
function latin1(octets: Uint8Array, start: number, end: number): string {
  let text = "";
  // `apply` takes a typed array as the arguments (spreading one is about 5
  // times slower); the arguments are bounded by the stack: 4096 at a time.
  for (let i = start; i < end; i += 4096) {
    const chunk = octets.subarray(i, Math.min(end, i + 4096));
    text += Reflect.apply(String.fromCharCode, null, chunk);
  }
  return text;
}

/**
 * Encodes a response header list: no dynamic table, no Huffman; an exact
 * static-table match (e.g. ":status" "200") is sent indexed, otherwise a
 * literal without indexing with the static name index when the name is in
 * the static table. Names are sent as given: HTTP/2 wants them lower-case.
 *
 * @throws {RangeError} if a name or value has a character above U+00FF.
 *
 * @example
 * ```ts
 * import { encodeHeaders } from "./hpack.ts";
 * const block = encodeHeaders([[":status", "200"], ["content-length", "2"]]);
 * // 0x88: static index 8; 0x0f 0x0d: "content-length" (index 28), then "2".
 * console.assert(block.join() === [0x88, 0x0f, 0x0d, 0x01, 0x32].join());
 * ```
 */
export function encodeHeaders(headers: HeaderList): Uint8Array {
  const out: number[] = [];
  for (const [name, value] of headers) {
    const entry = STATIC_BY_NAME.get(name);
    const exact = entry?.values.get(value);
    if (exact !== undefined) {
      writeInteger(out, 0x80, 7, exact);
      continue;
    }
    if (entry !== undefined) {
      writeInteger(out, 0x00, 4, entry.index);
    } else {
      out.push(0x00);
      writeString(out, name, name);
    }
    writeString(out, value, name);
  }
  return Uint8Array.from(out);
}

/** An integer with an `n`-bit prefix after the bits `flags` (RFC 7541 5.1). */
function writeInteger(
  out: number[],
  flags: number,
  n: number,
  value: number,
): void {
  const mask = (1 << n) - 1;
  if (value < mask) {
    out.push(flags | value);
    return;
  }
  out.push(flags | mask);
  let rest = value - mask;
  while (rest >= 0x80) {
    out.push((rest % 0x80) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  out.push(rest);
}

/** A raw (not Huffman) string literal of latin1 text. */
function writeString(out: number[], text: string, field: string): void {
  writeInteger(out, 0x00, 7, text.length);
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code > 0xff) {
      throw new RangeError(
        `header ${JSON.stringify(field)} has a character above U+00FF: U+${
          code.toString(16).toUpperCase().padStart(4, "0")
        }`,
      );
    }
    out.push(code);
  }
}
