/**
 * Colour only on a terminal. Deno colours its own lines (`Download`, the
 * test reporter) and so do some tools whatever their output is, so a log
 * or a pipe fills with escape sequences. The runners (tests/run.ts,
 * tests/openstack/run.ts, the demo) set `NO_COLOR` for every child they
 * start when their own output is not a terminal. The first Deno process
 * (`deno task ...`) prints before any of our code runs: set `NO_COLOR=1`
 * yourself for its lines (README, "Try it").
 *
 * @module
 */

/** What {@linkcode needsNoColor} decides from. */
export interface OutputFacts {
  stdoutIsTerminal: boolean;
  stderrIsTerminal: boolean;
  /** The current `NO_COLOR`, if set. */
  noColor: string | undefined;
}

/**
 * Whether children must be told `NO_COLOR`: when stdout or stderr is not a
 * terminal and `NO_COLOR` is not set already (any non-empty value counts,
 * as no-color.org says).
 *
 * @example
 * ```ts
 * import { needsNoColor } from "./plain_output.ts";
 * console.assert(needsNoColor({ stdoutIsTerminal: false, stderrIsTerminal: true, noColor: undefined }));
 * ```
 */
export function needsNoColor(facts: OutputFacts): boolean {
  if (facts.noColor !== undefined && facts.noColor !== "") return false;
  return !facts.stdoutIsTerminal || !facts.stderrIsTerminal;
}

/**
 * Sets `NO_COLOR=1` in this process's environment, which every child
 * inherits, when {@linkcode needsNoColor} says so; returns whether it did.
 *
 * @example
 * ```ts ignore
 * plainOutputForChildren(); // first thing in a runner
 * ```
 */
export function plainOutputForChildren(): boolean {
  const set = needsNoColor({
    stdoutIsTerminal: Deno.stdout.isTerminal(),
    stderrIsTerminal: Deno.stderr.isTerminal(),
    noColor: Deno.env.get("NO_COLOR"),
  });
  if (set) Deno.env.set("NO_COLOR", "1");
  return set;
}
