/**
 * The Deno version the project pins (package.json, the npm package `deno`)
 * and a note when another one runs: `npx deno` runs the pinned one (after
 * `npm ci`, or fetched by version through .npmrc), a system `deno` may not.
 *
 * @module
 */

/**
 * The pinned version from package.json's text.
 *
 * @throws {TypeError} when package.json pins no exact version of `deno`.
 *
 * @example
 * ```ts
 * import { pinnedDeno } from "./deno_pin.ts";
 * console.log(pinnedDeno('{"peerDependencies": {"deno": "2.9.6"}}')); // 2.9.6
 * ```
 */
export function pinnedDeno(packageJson: string): string {
  const pkg = JSON.parse(packageJson) as {
    peerDependencies?: Record<string, string>;
    devDependencies?: Record<string, string>;
  };
  const pin = pkg.peerDependencies?.["deno"] ?? pkg.devDependencies?.["deno"];
  if (pin === undefined || !/^\d+\.\d+\.\d+$/.test(pin)) {
    throw new TypeError(
      `package.json: deno is ${
        pin === undefined ? "not listed" : `"${pin}"`
      }; expected an exact version such as "2.9.6" in peerDependencies`,
    );
  }
  return pin;
}

/**
 * One line when `running` is not the pinned version, else undefined.
 *
 * @example
 * ```ts
 * import { denoPinNote } from "./deno_pin.ts";
 * console.log(denoPinNote("2.9.6", "2.9.6")); // undefined
 * ```
 */
export function denoPinNote(
  running: string,
  pinned: string,
): string | undefined {
  if (running === pinned) return undefined;
  return `note: this is Deno ${running}; the project pins ${pinned} (package.json): run \`npm ci\`, then \`npx deno task ...\` runs ${pinned}`;
}

/** The note for this process, read from the checkout's package.json. */
export async function denoPinNoteHere(): Promise<string | undefined> {
  const text = await Deno.readTextFile(
    new URL("../../package.json", import.meta.url),
  );
  return denoPinNote(Deno.version.deno, pinnedDeno(text));
}
