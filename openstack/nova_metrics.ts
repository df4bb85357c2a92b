/**
 * Nova calls counted where they are made: the Nova client tells each
 * call as it ends (nova.ts `onCall`), and one counter keeps them by the
 * client's name of the call, method, route template and outcome.
 *
 * @module
 */

import { Counter, type Registry } from "prom-client";
import type { NovaClient } from "./nova.ts";

/** Name of the counter of Nova calls. */
export const NOVA_CALLS_METRIC = "evictor_nova_calls_total";

/**
 * Counts every call `nova` makes in {@linkcode NOVA_CALLS_METRIC} on
 * `registry`; returns the counter.
 *
 * @example
 * ```ts ignore
 * const calls = countNovaCalls(nova, operator.metrics.registry);
 * ```
 */
export function countNovaCalls(
  nova: Pick<NovaClient, "onCall">,
  registry: Registry,
): Counter<"call" | "method" | "route" | "outcome"> {
  const counter = new Counter({
    name: NOVA_CALLS_METRIC,
    help:
      "Nova API calls made by evictor (every page of a list is one), by the client's name of the call, method, route template and outcome.",
    labelNames: ["call", "method", "route", "outcome"],
    registers: [registry],
  });
  nova.onCall((c) => counter.inc({ ...c }));
  return counter;
}
