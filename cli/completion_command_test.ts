import assert from "node:assert/strict";
import { commandFlags, completionScript } from "./completion_command.ts";
import { COMMAND_USAGE } from "./usage.ts";

/** What the bash script's candidates are for `words` (no cluster needed). */
async function candidates(words: string[]): Promise<string[]> {
  const script = completionScript("bash");
  const out = await new Deno.Command("bash", {
    args: [
      "-c",
      `${script}\n_kubectl_evictor_candidates "$@"`,
      "complete",
      ...words,
    ],
    env: { PATH: "/usr/bin:/bin" },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(new TextDecoder().decode(out.stderr), "");
  return new TextDecoder().decode(out.stdout).split("\n").filter((l) =>
    l !== ""
  ).sort();
}

Deno.test("completion: every command's flags come from its help", () => {
  const flags = commandFlags();
  assert.deepEqual(Object.keys(flags), Object.keys(COMMAND_USAGE));
  assert.ok(flags["drain"]?.includes("--reason"));
  assert.ok(flags["drain"]?.includes("--timeout"));
  assert.ok(flags["status"]?.includes("-o"));
  assert.ok(flags["status"]?.includes("-w"));
  for (const f of Object.values(flags)) assert.ok(f.includes("--context"));
});

Deno.test("completion bash: commands, flags, -o formats, shells", async () => {
  assert.deepEqual(await candidates(["st"]), ["status"]);
  assert.deepEqual(
    await candidates([""]),
    [...Object.keys(COMMAND_USAGE), "--help", "--version"].sort(),
  );
  assert.deepEqual(
    await candidates(["drain", "node1", "--re"]),
    ["--reason"],
  );
  assert.deepEqual(
    await candidates(["status", "-o", "j"]),
    ["json", "jsonpath="],
  );
  assert.deepEqual(await candidates(["plan", "-o", ""]), [
    "json",
    "table",
    "yaml",
  ]);
  assert.deepEqual(await candidates(["completion", ""]), ["bash", "zsh"]);
  // after --reason comes free text: nothing to offer
  assert.deepEqual(await candidates(["drain", "--reason", ""]), []);
});

Deno.test("completion zsh: the bash script through bashcompinit", () => {
  const zsh = completionScript("zsh");
  assert.match(zsh, /^#compdef kubectl-evictor\n/);
  assert.match(zsh, /bashcompinit/);
  assert.ok(
    zsh.endsWith(completionScript("bash").replace(/^#.*\n/, "")),
  );
});
