/**
 * The notes of the Events that name VMs: one per pass, not per VM (so `kubectl describe` keeps room
 * for what a person must do), each under 1 KiB.
 * @module
 */

import type { RequestOutcome } from "./plan_types.ts";

/** The most bytes of a note (Kubernetes truncates Event notes at 1 KiB). */
export const MAX_NOTE_BYTES = 1024;

const encoder = new TextEncoder();
const bytes = (s: string) => encoder.encode(s).length;

/**
 * `items` joined within `maxBytes` (UTF-8), the rest counted as "and N more"; at least one named.
 *
 * @example
 * ```ts
 * import { listSome } from "./event_notes.ts";
 * console.assert(listSome(["a", "b", "c"], 8) === "a, b and 1 more");
 * console.assert(listSome(["a", "b"]) === "a, b");
 * ```
 */
export function listSome(items: readonly string[], maxBytes = 600): string {
  const all = items.join(", ");
  if (bytes(all) <= maxBytes) return all;
  let out = "";
  let shown = 0;
  for (const item of items) {
    const next = shown === 0 ? item : `${out}, ${item}`;
    const rest = items.length - shown - 1;
    const tail = rest > 0 ? ` and ${rest} more` : "";
    if (shown > 0 && bytes(next) + bytes(tail) > maxBytes) break;
    out = next;
    shown++;
  }
  const more = items.length - shown;
  return more > 0 ? `${out} and ${more} more` : out;
}

/** Where the drain stands after the pass, for the end of a note. */
export interface NoteCounts {
  inFlight: number;
  outstanding: number;
  migrated: number;
}

function countsText(c: NoteCounts): string {
  return `(${c.inFlight} in flight, ${c.outstanding} outstanding, ${c.migrated} migrated)`;
}

/** The list of VMs cut so that the whole note stays in 1 KiB. */
function fitted(head: string, ids: readonly string[], tail: string): string {
  const room = MAX_NOTE_BYTES - bytes(head) - bytes(tail) - 24;
  return `${head}${listSome(ids, Math.max(room, 1))}${tail}`;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/**
 * The note of `MigrationsStarted`.
 *
 * @example
 * ```ts
 * import { startedNote } from "./event_notes.ts";
 * console.log(startedNote([{ id: "vm-a", kind: "live" }, { id: "vm-b", kind: "live" }],
 *   { inFlight: 12, outstanding: 40, migrated: 3 }));
 * // started 2 live migrations: vm-a, vm-b (12 in flight, 40 outstanding, 3 migrated)
 * ```
 */
export function startedNote(
  started: readonly { id: string; kind: "live" | "cold" }[],
  counts: NoteCounts,
): string {
  const live = started.filter((s) => s.kind === "live").length;
  const cold = started.length - live;
  const what = live > 0 && cold > 0
    ? `${live} live and ${plural(cold, "cold migration")}`
    : live > 0
    ? plural(live, "live migration")
    : plural(cold, "cold migration");
  return fitted(
    `started ${what}: `,
    started.map((s) => s.id),
    ` ${countsText(counts)}`,
  );
}

/**
 * The note of `MigrationsCompleted`.
 *
 * @example
 * ```ts
 * import { completedNote } from "./event_notes.ts";
 * console.log(completedNote("node042", ["vm-a"], { inFlight: 0, outstanding: 0, migrated: 9 }));
 * // 1 migration completed, left node042: vm-a (0 in flight, 0 outstanding, 9 migrated)
 * ```
 */
export function completedNote(
  host: string,
  ids: readonly string[],
  counts: NoteCounts,
): string {
  return fitted(
    `${plural(ids.length, "migration")} completed, left ${host}: `,
    ids,
    ` ${countsText(counts)}`,
  );
}

/**
 * The note of `ForceCompleteRequested` / `AbortRequested`.
 *
 * @example
 * ```ts
 * import { requestNote } from "./event_notes.ts";
 * console.log(requestNote({ server: "vm-a", action: "ForceComplete", requestedBy: "alice",
 *   requestedAt: "2026-01-01T00:00:00Z", outcome: "Sent", message: "" }));
 * // alice asked to force-complete the live migration of vm-a (2026-01-01T00:00:00Z): sent to Nova
 * ```
 */
export function requestNote(o: RequestOutcome): string {
  const what = o.action === "ForceComplete" ? "force-complete" : "abort";
  const outcome = o.outcome === "Sent"
    ? "sent to Nova"
    : o.outcome === "NotInFlight"
    ? "not sent: no live copy of it is in flight"
    : "refused";
  const why = o.message === "" ? "" : ` (${o.message})`;
  const note =
    `${o.requestedBy} asked to ${what} the live migration of ${o.server} (${o.requestedAt}): ${outcome}${why}`;
  return bytes(note) <= MAX_NOTE_BYTES
    ? note
    : `${note.slice(0, MAX_NOTE_BYTES - 200)}…`;
}
