import assert from "node:assert/strict";
import { needsNoColor } from "./plain_output.ts";

const ESC = String.fromCharCode(27);

Deno.test("needsNoColor: table", () => {
  const rows: [string, boolean, boolean, string | undefined, boolean][] = [
    ["both terminals", true, true, undefined, false],
    ["stdout piped", false, true, undefined, true],
    ["stderr to a file", true, false, undefined, true],
    ["both piped", false, false, undefined, true],
    ["piped, NO_COLOR already set", false, false, "1", false],
    ["piped, NO_COLOR empty (does not count)", false, false, "", true],
  ];
  for (
    const [name, stdoutIsTerminal, stderrIsTerminal, noColor, want] of rows
  ) {
    assert.equal(
      needsNoColor({ stdoutIsTerminal, stderrIsTerminal, noColor }),
      want,
      name,
    );
  }
});

Deno.test("plainOutputForChildren: a runner whose output is piped starts Deno children without escape sequences", async () => {
  // A runner (piped, as in `deno task demo | cat`) that starts `deno task`,
  // whose task list Deno colours otherwise; and the same without the call.
  const runner = (call: boolean) => `
    import { plainOutputForChildren } from ${
    JSON.stringify(new URL("./plain_output.ts", import.meta.url).href)
  };
    ${call ? "plainOutputForChildren();" : ""}
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["task"], cwd: ${
    JSON.stringify(new URL("../../", import.meta.url).pathname)
  }, stdout: "piped", stderr: "piped",
    }).output();
    await Deno.stdout.write(out.stdout);
    await Deno.stdout.write(out.stderr);
  `;
  const run = async (call: boolean) => {
    const env = { ...Deno.env.toObject() };
    delete env["NO_COLOR"];
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["eval", runner(call)],
      env,
      clearEnv: true,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    return new TextDecoder().decode(out.stdout);
  };
  const plain = await run(true);
  assert.match(plain, /Available tasks:/);
  assert.ok(!plain.includes(ESC), JSON.stringify(plain.slice(0, 200)));
  // Without it Deno colours piped output: the check above can fail.
  assert.ok((await run(false)).includes(ESC));
});
