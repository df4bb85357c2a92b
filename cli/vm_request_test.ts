import assert from "node:assert/strict";
import type { Eviction } from "../models/mod.ts";
import {
  appendPatch,
  decideRequest,
  evictionFor,
  outcomeOf,
  requestLine,
  waitVerdict,
} from "./vm_request.ts";

const VM = "3f1c2d4e-0b6a-4c1e-9f7a-2d5b8e9c1a0f";
const COLD = "11111111-2222-4333-8444-555555555555";
const OTHER = "99999999-2222-4333-8444-555555555555";
const NOW = "2026-12-07T10:00:00.000Z";

function ev(
  name: string,
  over: {
    hypervisor?: string;
    status?: Eviction["status"];
    actions?: Eviction["spec"]["actions"];
  } = {},
): Eviction {
  return {
    metadata: { name },
    spec: {
      hypervisor: over.hypervisor ?? name,
      reason: "kernel",
      ...(over.actions === undefined ? {} : { actions: over.actions }),
    },
    ...(over.status === undefined ? {} : { status: over.status }),
  };
}

const running = ev("n1", {
  status: {
    inFlight: [
      { id: VM, kind: "live", startedAt: "2026-12-07T09:50:00Z" },
      { id: COLD, kind: "cold", startedAt: "2026-12-07T09:55:00Z" },
    ],
  },
});

Deno.test("evictionFor: the unfinished drain of the host first, else by name, else a finished one", () => {
  const done = ev("n1-old", {
    hypervisor: "n1",
    status: { finishedAt: "2026-12-01T00:00:00Z" },
  });
  const other = ev("x", { hypervisor: "n2" });
  assert.equal(evictionFor([done, running, other], "n1"), running);
  assert.equal(evictionFor([done, other], "n1"), done);
  assert.equal(evictionFor([other], "x"), other);
  assert.equal(evictionFor([other], "n3"), undefined);
});

Deno.test("decideRequest: what is sent, and every refusal in one line", () => {
  const cases: {
    name: string;
    eviction: Eviction | undefined;
    vm: string;
    error?: string;
    notes?: number;
  }[] = [
    { name: "a live copy in flight, by id", eviction: running, vm: VM },
    {
      name: "a name: sent unchecked, with a note",
      eviction: running,
      vm: "hana-db-01",
      notes: 1,
    },
    {
      name: "no Eviction",
      eviction: undefined,
      vm: VM,
      error:
        "no Eviction drains n1: nothing is in flight there (kubectl evictor status lists the drains)",
    },
    {
      name: "finished",
      eviction: ev("n1", { status: { finishedAt: "2026-12-07T09:00:00Z" } }),
      vm: VM,
      error:
        "the drain of n1 (eviction.kvm.cloud.sap/n1) finished at 2026-12-07T09:00:00Z: nothing is in flight to force-complete or abort",
    },
    {
      name: "an id not in flight",
      eviction: running,
      vm: OTHER,
      error:
        `VM ${OTHER} is not in flight on n1 (live migrations in flight: ${VM}): nothing sent; kubectl evictor status n1 -o wide shows the copies`,
    },
    {
      name: "nothing in flight",
      eviction: ev("n1"),
      vm: OTHER,
      error:
        `VM ${OTHER} is not in flight on n1 (no live migration is): nothing sent; kubectl evictor status n1 -o wide shows the copies`,
    },
    {
      name: "a cold migration",
      eviction: running,
      vm: COLD,
      error:
        `VM ${COLD} is moved by a cold migration (a resize): Nova can neither force-complete nor abort it; nothing sent`,
    },
  ];
  for (const c of cases) {
    const d = decideRequest(
      c.eviction,
      "n1",
      c.vm,
      "ForceComplete",
      "alice",
      NOW,
    );
    if (c.error !== undefined) {
      assert.deepEqual(d, { ok: false, error: c.error }, c.name);
      continue;
    }
    assert.ok(d.ok, c.name);
    assert.deepEqual(d.item, {
      server: c.vm,
      action: "ForceComplete",
      requestedBy: "alice",
      requestedAt: NOW,
    }, c.name);
    assert.equal(d.notes.length, c.notes ?? 0, c.name);
    assert.equal(d.eviction, "n1");
  }
});

Deno.test("appendPatch: tests the list as read (absent: null), then appends", () => {
  const item = {
    server: VM,
    action: "Abort" as const,
    requestedBy: "alice",
    requestedAt: NOW,
  };
  assert.deepEqual(appendPatch(undefined, item), [
    { op: "test", path: "/spec/actions", value: null },
    { op: "add", path: "/spec/actions", value: [item] },
  ]);
  const earlier = { ...item, requestedBy: "bob" };
  assert.deepEqual(appendPatch([earlier], item), [
    { op: "test", path: "/spec/actions", value: [earlier] },
    { op: "add", path: "/spec/actions/-", value: item },
  ]);
  const d = decideRequest(
    ev("n1", { actions: [earlier], status: running.status }),
    "n1",
    VM,
    "Abort",
    "alice",
    NOW,
  );
  assert.ok(d.ok);
  assert.deepEqual(d.patch, appendPatch([earlier], item));
});

Deno.test("outcomeOf: the outcome at its index, else the last that answers it", () => {
  const item = {
    server: VM,
    action: "Abort" as const,
    requestedBy: "alice",
    requestedAt: NOW,
  };
  const sent = { ...item, outcome: "Sent", message: "sent", at: NOW };
  assert.equal(outcomeOf({}, item, 0), undefined);
  assert.equal(
    outcomeOf({ status: { actions: [sent] } }, item, 0)?.outcome,
    "Sent",
  );
  const other = { ...sent, server: OTHER, outcome: "NotInFlight" };
  assert.equal(
    outcomeOf({ status: { actions: [other, sent] } }, item, 0)?.outcome,
    "Sent",
  );
  assert.equal(outcomeOf({ status: { actions: [other] } }, item, 0), undefined);
  // another time of the same request is another request
  assert.equal(
    outcomeOf(
      {
        status: { actions: [{ ...sent, requestedAt: "2026-12-07T09:00:00Z" }] },
      },
      item,
      0,
    ),
    undefined,
  );
});

Deno.test("requestLine: kubectl's words, the index and who asked", () => {
  const item = {
    server: VM,
    action: "ForceComplete" as const,
    requestedBy: "alice",
    requestedAt: NOW,
  };
  assert.equal(
    requestLine("n1", 2, item, false),
    `eviction.kvm.cloud.sap/n1 patched: spec.actions[2] ForceComplete of ${VM} requested by alice at ${NOW}`,
  );
  assert.match(requestLine("n1", 0, item, true), /patched \(server dry run\)/);
});

Deno.test("waitVerdict: the outcome ends the wait; so do a deletion and a finished drain", () => {
  const item = {
    server: VM,
    action: "ForceComplete" as const,
    requestedBy: "alice",
    requestedAt: NOW,
  };
  const obj = (status: Record<string, unknown>) => ({
    metadata: { name: "n1" },
    status,
  });
  assert.equal(waitVerdict("MODIFIED", obj({}), item, 0), undefined);
  assert.deepEqual(
    waitVerdict(
      "MODIFIED",
      obj({ actions: [{ ...item, outcome: "Sent", message: "sent" }] }),
      item,
      0,
    ),
    { code: 0, line: `ForceComplete of ${VM}: Sent: sent` },
  );
  assert.deepEqual(
    waitVerdict(
      "MODIFIED",
      obj({ actions: [{ ...item, outcome: "Refused", message: "409" }] }),
      item,
      0,
    ),
    { code: 1, line: `error: ForceComplete of ${VM}: Refused: 409` },
  );
  assert.deepEqual(waitVerdict("DELETED", obj({}), item, 0), {
    code: 1,
    line:
      "error: eviction.kvm.cloud.sap/n1 was deleted before the request was answered",
  });
  assert.deepEqual(
    waitVerdict(
      "MODIFIED",
      obj({ finishedAt: "2026-12-07T11:00:00Z" }),
      item,
      0,
    ),
    {
      code: 1,
      line:
        "error: the drain of eviction.kvm.cloud.sap/n1 finished at 2026-12-07T11:00:00Z before the request was answered",
    },
  );
});
