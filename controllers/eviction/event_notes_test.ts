// The notes of the summarised Events: lists cut with "and N more", the
// whole under Kubernetes' 1 KiB, the kinds and counts said plainly.
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  completedNote,
  listSome,
  MAX_NOTE_BYTES,
  startedNote,
} from "./event_notes.ts";

const COUNTS = { inFlight: 12, outstanding: 40, migrated: 3 };

Deno.test("listSome: everything that fits, then and N more", () => {
  const rows: Array<[string[], number, string]> = [
    [[], 10, ""],
    [["a"], 10, "a"],
    [["a", "b", "c"], 7, "a, b, c"],
    // the limit holds the list and its "and N more"
    [["aaaa", "bbbb", "cccc", "dddd"], 22, "aaaa, bbbb, cccc, dddd"],
    [["aaaa", "bbbb", "cccc", "dddd"], 21, "aaaa, bbbb and 2 more"],
    [["aaaa", "bbbb", "cccc", "dddd"], 20, "aaaa and 3 more"],
    // the first is named even when it alone is too long
    [["abcdefgh", "b"], 3, "abcdefgh and 1 more"],
  ];
  for (const [items, max, want] of rows) {
    assert.equal(listSome(items, max), want, `${items} within ${max}`);
  }
});

Deno.test("startedNote: kinds, VMs and counts", () => {
  const rows: Array<
    [{ id: string; kind: "live" | "cold" }[], string]
  > = [
    [
      [{ id: "vm-a", kind: "live" }],
      "started 1 live migration: vm-a (12 in flight, 40 outstanding, 3 migrated)",
    ],
    [
      [{ id: "vm-a", kind: "live" }, { id: "vm-b", kind: "live" }],
      "started 2 live migrations: vm-a, vm-b (12 in flight, 40 outstanding, 3 migrated)",
    ],
    [
      [{ id: "vm-c", kind: "cold" }],
      "started 1 cold migration: vm-c (12 in flight, 40 outstanding, 3 migrated)",
    ],
    [
      [{ id: "a", kind: "live" }, { id: "b", kind: "cold" }, {
        id: "c",
        kind: "cold",
      }],
      "started 1 live and 2 cold migrations: a, b, c (12 in flight, 40 outstanding, 3 migrated)",
    ],
  ];
  for (const [started, want] of rows) {
    assert.equal(startedNote(started, COUNTS), want);
  }
});

Deno.test("completedNote: the host, the VMs and counts", () => {
  assert.equal(
    completedNote("node042", ["vm-a", "vm-b"], COUNTS),
    "2 migrations completed, left node042: vm-a, vm-b (12 in flight, 40 outstanding, 3 migrated)",
  );
});

Deno.test("notes stay under 1 KiB and count every VM (property)", () => {
  const bytes = (s: string) => new TextEncoder().encode(s).length;
  fc.assert(
    fc.property(
      fc.array(fc.string({ minLength: 1, maxLength: 60 }), {
        minLength: 1,
        maxLength: 300,
      }),
      fc.string({ minLength: 1, maxLength: 253 }),
      (ids, host) => {
        const notes = [
          startedNote(ids.map((id) => ({ id, kind: "live" })), COUNTS),
          completedNote(host, ids, COUNTS),
        ];
        for (const note of notes) {
          assert.ok(bytes(note) <= MAX_NOTE_BYTES, `${bytes(note)} bytes`);
          const more = /and (\d+) more \(/.exec(note);
          const shown = more === null
            ? ids.length
            : ids.length - Number(more[1]);
          assert.ok(shown >= 1, "at least one VM named");
          assert.ok(
            note.endsWith("(12 in flight, 40 outstanding, 3 migrated)"),
          );
        }
      },
    ),
  );
});
