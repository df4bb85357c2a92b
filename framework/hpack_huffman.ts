/**
 * The Huffman code of HPACK (RFC 7541 Appendix B) and its decoder, for the
 * string literals of {@linkcode ./hpack.ts}. The code is turned once, at
 * module load, into a state machine that consumes four bits per step (the
 * approach of nghttp2), so decoding is two table look-ups per octet and no
 * allocation beyond the result.
 *
 * A string is malformed when it contains the EOS symbol, or when it ends in
 * padding longer than 7 bits or padding that is not all ones (RFC 7541
 * 5.2); {@linkcode huffmanDecode} throws a `RangeError` then.
 *
 * @module
 */

/** The EOS symbol's index in {@linkcode HUFFMAN_CODES}. */
export const HUFFMAN_EOS = 256;

/**
 * The code of each symbol, right-aligned (RFC 7541 Appendix B): index 0..255
 * is the octet, 256 is EOS. Its length in bits is {@linkcode HUFFMAN_LENGTHS}
 * at the same index.
 *
 * @example
 * ```ts
 * import { HUFFMAN_CODES, HUFFMAN_LENGTHS } from "./hpack_huffman.ts";
 * const a = "a".charCodeAt(0);
 * console.assert(HUFFMAN_CODES[a] === 0x3 && HUFFMAN_LENGTHS[a] === 5);
 * ```
 */
// deno-fmt-ignore
export const HUFFMAN_CODES: readonly number[] = [
  0x1ff8, 0x7fffd8, 0xfffffe2, 0xfffffe3, 0xfffffe4, 0xfffffe5, 0xfffffe6, 0xfffffe7,
  0xfffffe8, 0xffffea, 0x3ffffffc, 0xfffffe9, 0xfffffea, 0x3ffffffd, 0xfffffeb, 0xfffffec,
  0xfffffed, 0xfffffee, 0xfffffef, 0xffffff0, 0xffffff1, 0xffffff2, 0x3ffffffe, 0xffffff3,
  0xffffff4, 0xffffff5, 0xffffff6, 0xffffff7, 0xffffff8, 0xffffff9, 0xffffffa, 0xffffffb,
  0x14, 0x3f8, 0x3f9, 0xffa, 0x1ff9, 0x15, 0xf8, 0x7fa,
  0x3fa, 0x3fb, 0xf9, 0x7fb, 0xfa, 0x16, 0x17, 0x18,
  0x0, 0x1, 0x2, 0x19, 0x1a, 0x1b, 0x1c, 0x1d,
  0x1e, 0x1f, 0x5c, 0xfb, 0x7ffc, 0x20, 0xffb, 0x3fc,
  0x1ffa, 0x21, 0x5d, 0x5e, 0x5f, 0x60, 0x61, 0x62,
  0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a,
  0x6b, 0x6c, 0x6d, 0x6e, 0x6f, 0x70, 0x71, 0x72,
  0xfc, 0x73, 0xfd, 0x1ffb, 0x7fff0, 0x1ffc, 0x3ffc, 0x22,
  0x7ffd, 0x3, 0x23, 0x4, 0x24, 0x5, 0x25, 0x26,
  0x27, 0x6, 0x74, 0x75, 0x28, 0x29, 0x2a, 0x7,
  0x2b, 0x76, 0x2c, 0x8, 0x9, 0x2d, 0x77, 0x78,
  0x79, 0x7a, 0x7b, 0x7ffe, 0x7fc, 0x3ffd, 0x1ffd, 0xffffffc,
  0xfffe6, 0x3fffd2, 0xfffe7, 0xfffe8, 0x3fffd3, 0x3fffd4, 0x3fffd5, 0x7fffd9,
  0x3fffd6, 0x7fffda, 0x7fffdb, 0x7fffdc, 0x7fffdd, 0x7fffde, 0xffffeb, 0x7fffdf,
  0xffffec, 0xffffed, 0x3fffd7, 0x7fffe0, 0xffffee, 0x7fffe1, 0x7fffe2, 0x7fffe3,
  0x7fffe4, 0x1fffdc, 0x3fffd8, 0x7fffe5, 0x3fffd9, 0x7fffe6, 0x7fffe7, 0xffffef,
  0x3fffda, 0x1fffdd, 0xfffe9, 0x3fffdb, 0x3fffdc, 0x7fffe8, 0x7fffe9, 0x1fffde,
  0x7fffea, 0x3fffdd, 0x3fffde, 0xfffff0, 0x1fffdf, 0x3fffdf, 0x7fffeb, 0x7fffec,
  0x1fffe0, 0x1fffe1, 0x3fffe0, 0x1fffe2, 0x7fffed, 0x3fffe1, 0x7fffee, 0x7fffef,
  0xfffea, 0x3fffe2, 0x3fffe3, 0x3fffe4, 0x7ffff0, 0x3fffe5, 0x3fffe6, 0x7ffff1,
  0x3ffffe0, 0x3ffffe1, 0xfffeb, 0x7fff1, 0x3fffe7, 0x7ffff2, 0x3fffe8, 0x1ffffec,
  0x3ffffe2, 0x3ffffe3, 0x3ffffe4, 0x7ffffde, 0x7ffffdf, 0x3ffffe5, 0xfffff1, 0x1ffffed,
  0x7fff2, 0x1fffe3, 0x3ffffe6, 0x7ffffe0, 0x7ffffe1, 0x3ffffe7, 0x7ffffe2, 0xfffff2,
  0x1fffe4, 0x1fffe5, 0x3ffffe8, 0x3ffffe9, 0xffffffd, 0x7ffffe3, 0x7ffffe4, 0x7ffffe5,
  0xfffec, 0xfffff3, 0xfffed, 0x1fffe6, 0x3fffe9, 0x1fffe7, 0x1fffe8, 0x7ffff3,
  0x3fffea, 0x3fffeb, 0x1ffffee, 0x1ffffef, 0xfffff4, 0xfffff5, 0x3ffffea, 0x7ffff4,
  0x3ffffeb, 0x7ffffe6, 0x3ffffec, 0x3ffffed, 0x7ffffe7, 0x7ffffe8, 0x7ffffe9, 0x7ffffea,
  0x7ffffeb, 0xffffffe, 0x7ffffec, 0x7ffffed, 0x7ffffee, 0x7ffffef, 0x7fffff0, 0x3ffffee,
  0x3fffffff,
];
/**
 * The length in bits of each code of {@linkcode HUFFMAN_CODES} (5..30).
 *
 * @example
 * ```ts
 * import { HUFFMAN_LENGTHS } from "./hpack_huffman.ts";
 * console.assert(HUFFMAN_LENGTHS[256] === 30); // EOS
 * ```
 */
// deno-fmt-ignore
export const HUFFMAN_LENGTHS: readonly number[] = [
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28,
  28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28,
  6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6,
  5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10,
  13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
  7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6,
  15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5,
  6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28,
  20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23,
  24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24,
  22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23,
  21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
  26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25,
  19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27,
  20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23,
  26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26,
  30,
];

/** Inner nodes of the code tree: a complete code of 257 symbols has 256. */
const NODES = 256;
/** A step's flag: it decoded a symbol (in bits 9..16). */
const EMIT = 1 << 8;
/** A step's flag: it decoded EOS, which a string must not contain. */
const FAIL = 1 << 17;

/**
 * The state machine: a state is an inner node of the code tree (0 the
 * root), and `STEP[state * 16 + nibble]` is the next state (bits 0..7), with
 * {@linkcode EMIT} and the symbol when the nibble completed one (a code is at
 * least 5 bits long, so a nibble completes at most one), or
 * {@linkcode FAIL}.
 */
const STEP = new Uint32Array(NODES * 16);
/**
 * What ending in a state means: {@linkcode END_OK} for the root and for a
 * node at most 7 bits down the all-ones path (the padding, a prefix of EOS),
 * {@linkcode END_NOT_ONES} or {@linkcode END_TOO_LONG} otherwise.
 */
const END = new Uint8Array(NODES);
const END_OK = 0;
const END_NOT_ONES = 1;
const END_TOO_LONG = 2;

buildStateMachine();

function buildStateMachine(): void {
  // child[2 * node + bit]: an inner node (> 0), a leaf -(symbol + 1) (< 0),
  // or 0 while unset (the root is nobody's child).
  const child = new Int16Array(NODES * 2);
  const depth = new Uint8Array(NODES);
  const allOnes = new Uint8Array(NODES);
  allOnes[0] = 1;
  let nodes = 1;
  for (let symbol = 0; symbol <= HUFFMAN_EOS; symbol++) {
    const code = HUFFMAN_CODES[symbol] ?? 0;
    const length = HUFFMAN_LENGTHS[symbol] ?? 0;
    let node = 0;
    for (let i = length - 1; i >= 0; i--) {
      const bit = (code >>> i) & 1;
      const slot = node * 2 + bit;
      const next = child[slot] ?? 0;
      if (next < 0 || (i === 0 && next !== 0)) {
        throw new Error(`HPACK Huffman code of ${symbol} is not prefix-free`);
      }
      if (i === 0) {
        child[slot] = -(symbol + 1);
      } else if (next > 0) {
        node = next;
      } else {
        if (nodes === NODES) {
          throw new Error(`HPACK Huffman code has more than ${NODES} nodes`);
        }
        child[slot] = nodes;
        depth[nodes] = length - i;
        allOnes[nodes] = (allOnes[node] ?? 0) & bit;
        node = nodes++;
      }
    }
  }
  if (nodes !== NODES || child.includes(0)) {
    throw new Error("HPACK Huffman code is not complete");
  }
  for (let state = 0; state < NODES; state++) {
    for (let nibble = 0; nibble < 16; nibble++) {
      let node = state;
      let step = 0;
      for (let i = 3; i >= 0; i--) {
        const next = child[node * 2 + ((nibble >>> i) & 1)] ?? 0;
        if (next >= 0) {
          node = next;
        } else if (next === -(HUFFMAN_EOS + 1)) {
          step = FAIL;
          break;
        } else {
          step = EMIT | ((-next - 1) << 9);
          node = 0;
        }
      }
      STEP[state * 16 + nibble] = step === FAIL ? FAIL : step | node;
    }
    END[state] = allOnes[state] !== 1
      ? END_NOT_ONES
      : (depth[state] ?? 8) > 7
      ? END_TOO_LONG
      : END_OK;
  }
}

/** Decoded octets are gathered here and turned into text a chunk at a time. */
const CHUNK = 1024;
const scratch = new Uint8Array(CHUNK);

/**
 * Decodes the Huffman-coded octets `src[start..end)` into a string of one
 * character per decoded octet (latin1: header octets are not UTF-8).
 *
 * @throws {RangeError} if the octets contain EOS, end in padding longer
 * than 7 bits or not all ones, or `start`/`end` are not within `src`.
 *
 * @example
 * ```ts
 * import { huffmanDecode } from "./hpack_huffman.ts";
 * const coded = new Uint8Array([0xa8, 0xeb, 0x10, 0x64, 0x9c, 0xbf]);
 * console.assert(huffmanDecode(coded) === "no-cache");
 * ```
 */
export function huffmanDecode(
  src: Uint8Array,
  start: number = 0,
  end: number = src.length,
): string {
  if (!(Number.isInteger(start) && start >= 0 && start <= end)) {
    throw new RangeError(`start must be an integer in 0..${end}, got ${start}`);
  }
  if (!(Number.isInteger(end) && end <= src.length)) {
    throw new RangeError(`end must be an integer <= ${src.length}, got ${end}`);
  }
  let text = "";
  let n = 0;
  let state = 0;
  for (let i = start; i < end; i++) {
    const octet = src[i] ?? 0;
    let step = STEP[(state << 4) | (octet >>> 4)] ?? FAIL;
    if (step & FAIL) throw eosError(i - start);
    if (step & EMIT) scratch[n++] = step >>> 9;
    state = step & 0xff;
    step = STEP[(state << 4) | (octet & 0xf)] ?? FAIL;
    if (step & FAIL) throw eosError(i - start);
    if (step & EMIT) scratch[n++] = step >>> 9;
    state = step & 0xff;
    if (n > CHUNK - 2) {
      text += latin1(scratch.subarray(0, n));
      n = 0;
    }
  }
  const ending = END[state];
  if (ending !== END_OK) {
    throw new RangeError(
      ending === END_TOO_LONG
        ? "Huffman string ends in padding longer than 7 bits"
        : "Huffman string ends in padding that is not all ones",
    );
  }
  return n === 0 ? text : text + latin1(scratch.subarray(0, n));
}

/**
 * Octets as text, one character each. `apply` takes a typed array as the
 * arguments (spreading it is about 5 times slower); at most {@linkcode CHUNK}.
 */
function latin1(octets: Uint8Array): string {
  return Reflect.apply(String.fromCharCode, null, octets);
}

function eosError(offset: number): RangeError {
  return new RangeError(`Huffman string contains EOS (octet ${offset})`);
}
