// Which migrations a cancel with --abort-in-flight aborts: only live ones
// of ours from the host that Nova can still abort, each once per look.
import assert from "node:assert/strict";
import type { Migration } from "../../openstack/mod.ts";
import {
  ABORT_IN_FLIGHT_ANNOTATION,
  abortRequested,
  cancelAborts,
} from "./abort_in_flight.ts";

const HOST = "node042";

function rec(
  id: number,
  vm: string,
  extra: Partial<Migration> = {},
): Migration {
  return {
    id,
    uuid: `u${id}`,
    instanceUuid: vm,
    migrationType: "live-migration",
    status: "running",
    sourceCompute: HOST,
    destCompute: "dst",
    sourceNode: HOST,
    destNode: "dst",
    destHost: null,
    createdAt: "2026-01-01T00:00:00",
    updatedAt: null,
    ...extra,
  } as Migration;
}

Deno.test("abortRequested: only the annotation set to true", () => {
  const rows: Array<[Record<string, string> | undefined, boolean]> = [
    [undefined, false],
    [{}, false],
    [{ [ABORT_IN_FLIGHT_ANNOTATION]: "true" }, true],
    [{ [ABORT_IN_FLIGHT_ANNOTATION]: "false" }, false],
    [{ [ABORT_IN_FLIGHT_ANNOTATION]: "yes" }, false],
  ];
  for (const [annotations, want] of rows) {
    assert.equal(abortRequested({ metadata: { annotations } }), want);
  }
});

Deno.test("cancelAborts: ours, live, from the host, abortable, once per look", () => {
  const live = { id: "vm", kind: "live" as const };
  const rows: Array<{
    name: string;
    migrations: Migration[];
    inFlight: Parameters<typeof cancelAborts>[0]["inFlight"];
    aborts?: Map<string, { sentAtMs: number; answeredAtMs?: number }>;
    want: Array<[string, number]>;
  }> = [
    {
      name: "a running live migration of ours",
      migrations: [rec(7, "vm")],
      inFlight: [live],
      want: [["vm", 7]],
    },
    {
      name: "queued and preparing are abortable too",
      migrations: [
        rec(1, "a", { status: "queued" }),
        rec(2, "b", {
          status: "preparing",
        }),
      ],
      inFlight: [{ id: "b", kind: "live" }, { id: "a", kind: "live" }],
      want: [["a", 1], ["b", 2]],
    },
    {
      name:
        "a copy force-completed is left to end (post-copy cannot be aborted)",
      migrations: [rec(7, "vm")],
      inFlight: [{ ...live, forceCompleteSentAt: "2026-01-01T00:00:00Z" }],
      want: [],
    },
    {
      name: "post-migrating is past the point of abort",
      migrations: [rec(7, "vm", { status: "post-migrating" })],
      inFlight: [live],
      want: [],
    },
    {
      name: "not ours: not in status.inFlight",
      migrations: [rec(7, "other")],
      inFlight: [live],
      want: [],
    },
    {
      name: "adopted: someone else's move",
      migrations: [rec(7, "vm")],
      inFlight: [{ ...live, adopted: true }],
      want: [],
    },
    {
      name: "cold: Nova cannot abort it",
      migrations: [rec(7, "vm", { migrationType: "migration" })],
      inFlight: [{ id: "vm", kind: "cold" }],
      want: [],
    },
    {
      name: "another host's record of the VM",
      migrations: [rec(7, "vm", { sourceCompute: "elsewhere" })],
      inFlight: [live],
      want: [],
    },
    {
      name: "a record other than the one the start was matched to",
      migrations: [rec(7, "vm")],
      inFlight: [{ ...live, migrationId: "6" }],
      want: [],
    },
    {
      name: "the record the start was matched to",
      migrations: [rec(7, "vm")],
      inFlight: [{ ...live, migrationId: "7" }],
      want: [["vm", 7]],
    },
    {
      name: "an abort without an answer yet is not sent again",
      migrations: [rec(7, "vm")],
      inFlight: [live],
      aborts: new Map([["7", { sentAtMs: 0 }]]),
      want: [],
    },
    {
      name: "an abort answered before this look began: the record runs on",
      migrations: [rec(7, "vm")],
      inFlight: [live],
      aborts: new Map([["7", { sentAtMs: 0, answeredAtMs: 50 }]]),
      want: [["vm", 7]],
    },
    {
      name: "an abort answered after this look began",
      migrations: [rec(7, "vm")],
      inFlight: [live],
      aborts: new Map([["7", { sentAtMs: 0, answeredAtMs: 150 }]]),
      want: [],
    },
  ];
  for (const r of rows) {
    const got = cancelAborts({
      host: HOST,
      migrations: r.migrations,
      inFlight: r.inFlight,
      aborts: r.aborts ?? new Map(),
      lookedAtMs: 100,
    });
    assert.deepEqual(
      got.map((a) => [a.id, a.migrationId]),
      r.want,
      r.name,
    );
  }
});
