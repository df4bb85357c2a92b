/**
 * Reads back what `deno compile` embedded in a Linux executable: the JSON
 * metadata (permissions, V8 flags, entry point) and the npm snapshot (the
 * packages the binary carries).
 *
 * The layout, from Deno 2.9's source: `cli/standalone/binary.rs`
 * (`serialize_binary_data_section`, `serialize_npm_snapshot`) writes a data
 * section `d3n0l4nd | u64 metadata length | metadata JSON | u64 snapshot
 * length | snapshot | specifiers | redirects | remote modules | u64 VFS
 * length | VFS JSON | u64 file data length | file data | d3n0l4nd`, and
 * libsui's `Elf::append` puts it in an
 * ELF note (owner `SUI`, type 0x53554901, descriptor `u16 name length | name
 * | data`) that a new `PT_NOTE` program header points at. All integers are
 * little-endian.
 *
 * @module
 */

/** The section name and the magic bytes around the data section. */
const MAGIC = "d3n0l4nd";
const NOTE_OWNER = "SUI";
const NOTE_TYPE_SECTION_DATA = 0x5355_4901;
const PT_NOTE = 4;

/** What a compiled binary carries, as far as the tests look. */
export interface CompiledBinary {
  /** The metadata JSON as `deno compile` serialized it (`Metadata` in Deno). */
  metadata: {
    permissions: Record<string, unknown>;
    v8_flags: string[];
    entrypoint_key: string;
    [key: string]: unknown;
  };
  /** Ids of the embedded npm packages (`name@version`, peers after `_`), sorted. */
  npmPackages: string[];
  /** The snapshot's root requests (`zod@4.6.7`) and the package each resolves to. */
  npmRoots: Record<string, string>;
  /** The bytes `deno compile` appended to the runtime: the whole data section. */
  payloadBytes: number;
  /**
   * The embedded files by path from the VFS root (the entry point's project
   * folder; npm packages under `.deno_compile_node_modules/localhost/NAME/VERSION/`),
   * each with its content as it was on disk.
   */
  files: Map<string, Uint8Array>;
}

/** Where `deno compile` puts the npm packages in the VFS. */
export const EMBEDDED_NPM_DIR = ".deno_compile_node_modules/localhost";

/**
 * Reads the embedded metadata and npm snapshot of a `deno compile` output for
 * Linux.
 *
 * @example
 * ```ts ignore
 * const { metadata, npmPackages } = await readCompiledBinary("dist/evictor");
 * console.log(metadata.v8_flags, npmPackages);
 * ```
 */
export async function readCompiledBinary(
  path: string,
): Promise<CompiledBinary> {
  const section = await readElfNoteSection(path, MAGIC);
  return parseDataSection(section, path);
}

/** The descriptor data of the libsui note named `name`. */
async function readElfNoteSection(
  path: string,
  name: string,
): Promise<Uint8Array> {
  using file = await Deno.open(path);
  const header = await readAt(file, 0, 64);
  const view = new DataView(header.buffer);
  if (text(header.subarray(0, 4)) !== "\x7fELF" || header[4] !== 2) {
    throw new TypeError(`${path}: not a 64-bit ELF executable`);
  }
  if (header[5] !== 1) {
    throw new TypeError(`${path}: big-endian ELF, expected little-endian`);
  }
  const phoff = Number(view.getBigUint64(0x20, true));
  const phentsize = view.getUint16(0x36, true);
  const phnum = view.getUint16(0x38, true);
  const table = await readAt(file, phoff, phentsize * phnum);
  const phdrs = new DataView(table.buffer);
  for (let i = 0; i < phnum; i++) {
    const at = i * phentsize;
    if (phdrs.getUint32(at, true) !== PT_NOTE) continue;
    const offset = Number(phdrs.getBigUint64(at + 8, true));
    const size = Number(phdrs.getBigUint64(at + 32, true));
    const align = Math.max(Number(phdrs.getBigUint64(at + 48, true)), 4);
    const found = findNote(await readAt(file, offset, size), align, name);
    if (found) return found;
  }
  throw new Error(
    `${path}: no ${NOTE_OWNER} note named ${name}: not a deno compile output`,
  );
}

function findNote(
  segment: Uint8Array,
  align: number,
  name: string,
): Uint8Array | undefined {
  const view = new DataView(
    segment.buffer,
    segment.byteOffset,
    segment.byteLength,
  );
  const up = (n: number) => Math.ceil(n / align) * align;
  let pos = 0;
  while (pos + 12 <= segment.length) {
    const nameSize = view.getUint32(pos, true);
    const descSize = view.getUint32(pos + 4, true);
    const type = view.getUint32(pos + 8, true);
    const owner = text(segment.subarray(pos + 12, pos + 12 + nameSize))
      .replace(/\0+$/, "");
    const descAt = up(pos + 12 + nameSize);
    const desc = segment.subarray(descAt, descAt + descSize);
    pos = up(descAt + descSize);
    if (owner !== NOTE_OWNER || type !== NOTE_TYPE_SECTION_DATA) continue;
    const nameLength = new DataView(desc.buffer, desc.byteOffset, 2)
      .getUint16(0, true);
    if (text(desc.subarray(2, 2 + nameLength)) === name) {
      return desc.subarray(2 + nameLength);
    }
  }
  return undefined;
}

function parseDataSection(data: Uint8Array, path: string): CompiledBinary {
  const reader = new Reader(data, path);
  reader.expectMagic();
  const metadata = JSON.parse(text(reader.bytes(reader.u64())));
  const snapshot = new Reader(reader.bytes(reader.u64()), path);
  if (text(data.subarray(data.length - MAGIC.length)) !== MAGIC) {
    throw new TypeError(`${path}: data section does not end in ${MAGIC}`);
  }
  // Remote modules and redirects are empty in builds with --no-remote; the
  // specifier store is read for its length only.
  const specifiers = reader.u32();
  for (let i = 0; i < specifiers; i++) {
    reader.bytes(reader.u32());
    reader.u32();
  }
  for (const store of ["redirects", "remote modules"]) {
    const count = reader.u32();
    if (count !== 0) {
      throw new RangeError(
        `${path}: ${count} ${store}; this reader expects none (a build with --no-remote)`,
      );
    }
  }
  const vfs: VfsEntry[] = JSON.parse(text(reader.bytes(reader.u64())));
  const fileData = reader.bytes(reader.u64());
  const files = new Map<string, Uint8Array>();
  collectFiles(vfs, "", fileData, files, path);
  const npmPackages: string[] = [];
  const npmRoots: Record<string, string> = {};
  if (snapshot.remaining > 0) {
    const count = snapshot.u32();
    for (let i = 0; i < count; i++) npmPackages.push(snapshot.string());
    const roots = snapshot.u32();
    for (let i = 0; i < roots; i++) {
      const request = snapshot.string();
      const id = npmPackages[snapshot.u32()];
      if (id === undefined) {
        throw new RangeError(`${path}: npm root ${request} names no package`);
      }
      npmRoots[request] = id;
    }
  }
  return {
    metadata,
    npmPackages: npmPackages.sort(),
    npmRoots,
    payloadBytes: data.length,
    files,
  };
}

/**
 * A VFS entry as Deno 2.9 serializes it (`VfsEntry` in
 * `cli/lib/standalone/virtual_fs.rs`): a folder's name and entries, or a
 * file's name and `[offset, length]` of its original bytes in the file data
 * (`m`, `s`, `c`: transpiled code, source map, CJS analysis).
 */
type VfsEntry =
  | { Dir: { n: string; e: VfsEntry[] } }
  | { File: { n: string; o: [number, number] } }
  | { Symlink: { n: string } };

function collectFiles(
  entries: VfsEntry[],
  prefix: string,
  data: Uint8Array,
  out: Map<string, Uint8Array>,
  path: string,
): void {
  for (const entry of entries) {
    if ("Dir" in entry) {
      collectFiles(entry.Dir.e, `${prefix}${entry.Dir.n}/`, data, out, path);
    } else if ("File" in entry) {
      const [offset, length] = entry.File.o;
      if (offset + length > data.length) {
        throw new RangeError(
          `${path}: embedded file ${prefix}${entry.File.n} overruns the file data`,
        );
      }
      out.set(
        `${prefix}${entry.File.n}`,
        data.subarray(offset, offset + length),
      );
    } else {
      throw new TypeError(
        `${path}: embedded symlink ${prefix}${entry.Symlink.n}; this reader expects files and folders only`,
      );
    }
  }
}

/**
 * Writes the embedded files of `binary` out as Deno runs them: the project
 * files under `dir/src` and the npm packages as the npm cache of a
 * `DENO_DIR` at `dir/deno_dir`. With the project's lockfile copied in,
 * `deno run --cached-only --unstable-npm-lazy-caching` of the entry point
 * there loads modules only from what the binary carries, so a module the
 * compile step left out fails the run.
 *
 * @example
 * ```ts ignore
 * const { src, denoDir } = await layOutPayload(binary, "/tmp/x");
 * ```
 */
export async function layOutPayload(
  binary: CompiledBinary,
  dir: string,
): Promise<{ src: string; denoDir: string }> {
  const src = `${dir}/src`;
  const denoDir = `${dir}/deno_dir`;
  const npm = `${denoDir}/npm/registry.npmjs.org`;
  for (const [path, bytes] of binary.files) {
    const target = path.startsWith(`${EMBEDDED_NPM_DIR}/`)
      ? `${npm}/${path.slice(EMBEDDED_NPM_DIR.length + 1)}`
      : `${src}/${path}`;
    await Deno.mkdir(target.slice(0, target.lastIndexOf("/")), {
      recursive: true,
    });
    await Deno.writeFile(target, bytes);
  }
  return { src, denoDir };
}

/** A cursor over little-endian fields. */
class Reader {
  #pos = 0;
  readonly #view: DataView;
  constructor(readonly data: Uint8Array, readonly path: string) {
    this.#view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  }
  get remaining(): number {
    return this.data.length - this.#pos;
  }
  expectMagic(): void {
    const found = text(this.bytes(MAGIC.length));
    if (found !== MAGIC) {
      throw new TypeError(
        `${this.path}: data section starts with ${
          JSON.stringify(found)
        }, expected ${MAGIC}`,
      );
    }
  }
  u32(): number {
    const value = this.#view.getUint32(this.#pos, true);
    this.#pos += 4;
    return value;
  }
  u64(): number {
    const value = Number(this.#view.getBigUint64(this.#pos, true));
    this.#pos += 8;
    return value;
  }
  bytes(length: number): Uint8Array {
    if (length > this.remaining) {
      throw new RangeError(
        `${this.path}: a field of ${length} bytes overruns the data section (${this.remaining} left)`,
      );
    }
    const out = this.data.subarray(this.#pos, this.#pos + length);
    this.#pos += length;
    return out;
  }
  string(): string {
    return text(this.bytes(this.u32()));
  }
}

async function readAt(
  file: Deno.FsFile,
  offset: number,
  length: number,
): Promise<Uint8Array> {
  const out = new Uint8Array(length);
  await file.seek(offset, Deno.SeekMode.Start);
  let filled = 0;
  while (filled < length) {
    const n = await file.read(out.subarray(filled));
    if (n === null) {
      throw new RangeError(
        `file ends at ${
          offset + filled
        }, expected ${length} bytes from ${offset}`,
      );
    }
    filled += n;
  }
  return out;
}

function text(bytes: Uint8Array): string {
  return new TextDecoder().decode(bytes);
}
