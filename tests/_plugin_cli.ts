/**
 * Test helpers for the kubectl plugin: `kubectl evictor ...` run by the
 * real kubectl with bin/ on PATH, and the one-line failure it must print.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { Envtest } from "./harness/envtest.ts";

const ROOT = new URL("../", import.meta.url);
const BIN = new URL("bin", ROOT).pathname;

/** What a run printed and its exit code. */
export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `kubectl evictor ARGS` with only `env` (and PATH, HOME, DENO_DIR). */
export async function kubectlEvictor(
  api: Envtest,
  args: string[],
  env: Record<string, string>,
): Promise<Run> {
  const denoDir = Deno.env.get("DENO_DIR");
  const out = await new Deno.Command(`${api.binDir}/kubectl`, {
    args: ["evictor", ...args],
    env: {
      PATH: `${BIN}:${Deno.env.get("PATH") ?? ""}`,
      HOME: Deno.env.get("HOME") ?? "/tmp",
      ...(denoDir === undefined ? {} : { DENO_DIR: denoDir }),
      ...env,
    },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const d = new TextDecoder();
  return {
    code: out.code,
    stdout: d.decode(out.stdout),
    stderr: d.decode(out.stderr),
  };
}

/** A failure as the plugin must report it: one line, no stack trace. */
export function assertOneLine(run: Run, code: number, pattern: RegExp): void {
  assert.equal(run.code, code, `exit code; stderr: ${run.stderr}`);
  const lines = run.stderr.split("\n").filter((l) => l.trim() !== "");
  assert.equal(lines.length, 1, `one line, got:\n${run.stderr}`);
  assert.match(lines[0] ?? "", /^error: /);
  assert.match(lines[0] ?? "", pattern);
  // a stack frame: "    at fn (file:///x.ts:1:2)"
  assert.doesNotMatch(run.stderr, /^\s+at .*:\d+:\d+\)?$/m);
}
