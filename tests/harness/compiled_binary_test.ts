import assert from "node:assert/strict";
import { readCompiledBinary } from "./compiled_binary.ts";

Deno.test("readCompiledBinary refuses a file that is not a 64-bit ELF", async () => {
  const path = await Deno.makeTempFile();
  try {
    await Deno.writeTextFile(path, "#!/bin/sh\n".padEnd(64, " "));
    await assert.rejects(
      readCompiledBinary(path),
      new TypeError(`${path}: not a 64-bit ELF executable`),
    );
  } finally {
    await Deno.remove(path);
  }
});

Deno.test("readCompiledBinary refuses an ELF that deno compile did not write", async () => {
  // The deno CLI itself: an executable without the embedded section.
  await assert.rejects(
    readCompiledBinary(Deno.execPath()),
    new Error(
      `${Deno.execPath()}: no SUI note named d3n0l4nd: not a deno compile output`,
    ),
  );
});
