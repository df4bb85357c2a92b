/**
 * The two ways a benchmark drains: polling Nova, or driven by Nova's
 * notifications (issue 23).
 *
 * @module
 */

/** How a drain learns what Nova did. */
export type Mode = "polling" | "notifications";

/**
 * Parses `--modes` (comma-separated).
 *
 * @example
 * ```ts
 * import { parseModes } from "./modes.ts";
 * console.assert(parseModes("polling,notifications").length === 2);
 * ```
 */
export function parseModes(text: string): Mode[] {
  return text.split(",").map((m): Mode => {
    if (m === "polling" || m === "notifications") return m;
    throw new RangeError(
      `--modes entries are polling or notifications, got "${m}"`,
    );
  });
}
