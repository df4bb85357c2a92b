/**
 * The Deno that `npx deno` runs is the one package.json pins: the lock
 * installs that version (`npm ci`), and .npmrc names it for npx on a clone
 * without node_modules. The three must agree.
 */
import assert from "node:assert/strict";
import { denoPinNote, pinnedDeno } from "./harness/deno_pin.ts";

const root = new URL("../", import.meta.url);
const read = (path: string) => Deno.readTextFile(new URL(path, root));

Deno.test("toolchain pin: package.json, package-lock.json and .npmrc name one Deno version", async () => {
  const pin = pinnedDeno(await read("package.json"));
  const lock = JSON.parse(await read("package-lock.json")) as {
    packages: Record<
      string,
      { version?: string; peerDependencies?: Record<string, string> }
    >;
  };
  assert.equal(lock.packages[""]?.peerDependencies?.["deno"], pin);
  assert.equal(lock.packages["node_modules/deno"]?.version, pin);
  const npmrc = (await read(".npmrc")).split("\n").filter((l) =>
    l.startsWith("package=")
  );
  assert.deepEqual(npmrc, [`package=deno@${pin}`]);
});

Deno.test("toolchain pin: pinnedDeno wants an exact version; the note only for another Deno", () => {
  const rows: [string, string | RegExp][] = [
    ['{"peerDependencies": {"deno": "2.9.6"}}', "2.9.6"],
    ['{"devDependencies": {"deno": "2.10.0"}}', "2.10.0"],
    [
      '{"peerDependencies": {"deno": "^2.9.6"}}',
      /^package\.json: deno is "\^2\.9\.6"; expected an exact version/,
    ],
    ["{}", /^package\.json: deno is not listed; expected an exact version/],
  ];
  for (const [text, want] of rows) {
    if (typeof want === "string") assert.equal(pinnedDeno(text), want);
    else {
      assert.throws(
        () => pinnedDeno(text),
        (e: unknown) => e instanceof TypeError && want.test(e.message),
      );
    }
  }
  assert.equal(denoPinNote("2.9.6", "2.9.6"), undefined);
  assert.equal(
    denoPinNote("2.10.1", "2.9.6"),
    "note: this is Deno 2.10.1; the project pins 2.9.6 (package.json): run `npm ci`, then `npx deno task ...` runs 2.9.6",
  );
});
