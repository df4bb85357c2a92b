import assert from "node:assert/strict";
import fc from "fast-check";
import {
  answers,
  type ConvergenceRequest,
  pendingRequests,
  type RequestAnswer,
} from "./requests.ts";

const T0 = "2026-12-07T10:00:00Z";
const req = (
  server: string,
  over: Partial<ConvergenceRequest> = {},
): ConvergenceRequest => ({
  server,
  action: "ForceComplete",
  requestedBy: "alice",
  requestedAt: T0,
  ...over,
});
const outcome = (r: ConvergenceRequest, withAt = false): RequestAnswer => ({
  server: r.server,
  action: r.action,
  requestedBy: r.requestedBy,
  ...(withAt ? { requestedAt: r.requestedAt } : {}),
});

Deno.test("pendingRequests: the requests without an outcome, in order", () => {
  const a = req("vm-a");
  const b = req("vm-b", { action: "Abort" });
  const c = req("vm-c", { requestedBy: "bob" });
  const again = req("vm-a", { requestedAt: "2026-12-07T10:05:00Z" });
  const cases: {
    name: string;
    spec: ConvergenceRequest[] | undefined;
    status: RequestAnswer[] | undefined;
    want: ConvergenceRequest[];
  }[] = [
    { name: "none asked", spec: undefined, status: undefined, want: [] },
    { name: "none answered", spec: [a, b], status: undefined, want: [a, b] },
    { name: "by index", spec: [a, b, c], status: [outcome(a)], want: [b, c] },
    {
      name: "all answered",
      spec: [a, b],
      status: [outcome(a), outcome(b)],
      want: [],
    },
    {
      name: "out of order: matched by key",
      spec: [a, b, c],
      status: [outcome(c), outcome(a)],
      want: [b],
    },
    {
      // the same request made twice: one outcome answers only the first
      name: "same key twice, one outcome",
      spec: [a, { ...a }],
      status: [outcome(a)],
      want: [{ ...a }],
    },
    {
      name: "another user's outcome answers nothing",
      spec: [a],
      status: [{ ...outcome(a), requestedBy: "mallory" }],
      want: [a],
    },
    {
      name: "another action's outcome answers nothing",
      spec: [a],
      status: [{ ...outcome(a), action: "Abort" }],
      want: [a],
    },
    {
      name: "requestedAt tells a repeat from the first when carried",
      spec: [a, again],
      status: [outcome(again, true)],
      want: [a],
    },
    {
      name: "requestedAt compared as a time",
      spec: [a],
      status: [{ ...outcome(a), requestedAt: "2026-12-07T10:00:00.000Z" }],
      want: [],
    },
    {
      name: "a trimmed status list still matches by key",
      spec: [a, b, c],
      status: [outcome(b), outcome(c)],
      want: [a],
    },
  ];
  for (const t of cases) {
    assert.deepEqual(pendingRequests(t.spec, t.status), t.want, t.name);
  }
});

Deno.test("answers: server, action, user, and the time when carried", () => {
  const a = req("vm-a");
  assert.equal(answers(outcome(a), a), true);
  assert.equal(answers({ ...outcome(a), server: "vm-b" }, a), false);
  assert.equal(
    answers({ ...outcome(a), requestedAt: "2026-12-07T10:00:01Z" }, a),
    false,
  );
  assert.equal(answers({ ...outcome(a), requestedAt: "not a time" }, a), false);
});

const arbRequest = fc.record({
  server: fc.constantFrom("vm-1", "vm-2", "vm-3"),
  action: fc.constantFrom("ForceComplete" as const, "Abort" as const),
  requestedBy: fc.constantFrom("alice", "bob"),
  requestedAt: fc.constantFrom(T0, "2026-12-07T10:01:00Z"),
});

Deno.test("pendingRequests: each outcome answers at most one request; outcomes in order answer a prefix", () => {
  fc.assert(
    fc.property(
      fc.array(arbRequest, { maxLength: 12 }),
      fc.nat(12),
      fc.boolean(),
      (asked, n, withAt) => {
        const k = Math.min(n, asked.length);
        const status = asked.slice(0, k).map((r) => outcome(r, withAt));
        const pending = pendingRequests(asked, status);
        // recorded in order: exactly the rest is pending
        assert.deepEqual(pending, asked.slice(k));
        // shuffled outcomes: still as many answered as there are outcomes
        const reversed = pendingRequests(asked, status.slice().reverse());
        assert.equal(reversed.length, asked.length - k);
      },
    ),
  );
});
