import assert from "node:assert/strict";
import fc from "fast-check";
import { checkGateLimits, RequestGate, type Ticket } from "./webhook_gate.ts";

const limits = { maxInFlight: 2, maxBodyBytes: 100, maxBufferedBytes: 150 };

Deno.test("RequestGate: table", async (t) => {
  const cases: {
    name: string;
    steps: (gate: RequestGate) => unknown;
    want: unknown;
  }[] = [
    {
      name: "a declared body over the cap: 413",
      steps: (g) => g.open(101),
      want: { status: 413, message: "request body exceeds 100 bytes" },
    },
    {
      name: "a declared body at the cap: admitted",
      steps: (g) => "grow" in g.open(100),
      want: true,
    },
    {
      name: "the third request in flight: 429",
      steps: (g) => {
        g.open(1);
        g.open(1);
        return g.open(1);
      },
      want: {
        status: 429,
        message: "the webhook is at capacity (2 requests are in flight); retry",
      },
    },
    {
      name: "declared bodies over the budget: 429",
      steps: (g) => {
        g.open(100);
        return g.open(51);
      },
      want: {
        status: 429,
        message:
          "the webhook is at capacity (150 bytes of bodies are buffered); retry",
      },
    },
    {
      name: "an undeclared body growing past the cap: 413",
      steps: (g) => {
        const t = g.open(undefined) as Ticket;
        return [t.grow(60), t.grow(41)?.status];
      },
      want: [undefined, 413],
    },
    {
      name: "an undeclared body growing past the budget: 429",
      steps: (g) => {
        g.open(100);
        const t = g.open(undefined) as Ticket;
        return [t.grow(50), t.grow(1)?.status];
      },
      want: [undefined, 429],
    },
    {
      name: "closing frees the slot and the bytes, once",
      steps: (g) => {
        const t = g.open(100) as Ticket;
        t.close();
        t.close();
        return [g.inFlight, g.buffered, "grow" in g.open(100)];
      },
      want: [0, 0, true],
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      assert.deepEqual(c.steps(new RequestGate(limits)), c.want);
    });
  }
});

Deno.test("checkGateLimits: names the bad value", () => {
  assert.throws(
    () => checkGateLimits({ ...limits, maxInFlight: 0 }),
    /maxInFlight must be an integer > 0, got 0/,
  );
  assert.throws(
    () => checkGateLimits({ ...limits, maxBufferedBytes: 50 }),
    /maxBufferedBytes \(50\) must be >= maxBodyBytes \(100\)/,
  );
});

Deno.test("property: the caps hold for any sequence, and closing everything returns to zero", () => {
  const op = fc.oneof(
    fc.record({
      open: fc.option(fc.integer({ min: 0, max: 200 }), { nil: undefined }),
    }),
    fc.record({ grow: fc.nat(9), bytes: fc.integer({ min: 0, max: 80 }) }),
    fc.record({ close: fc.nat(9) }),
  );
  fc.assert(fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
    const gate = new RequestGate(limits);
    const tickets: Ticket[] = [];
    for (const o of ops) {
      if ("open" in o) {
        const t = gate.open(o.open);
        if ("grow" in t) tickets.push(t);
      } else if ("grow" in o) {
        tickets[o.grow % Math.max(1, tickets.length)]?.grow(o.bytes);
      } else {
        tickets[o.close % Math.max(1, tickets.length)]?.close();
      }
      assert.ok(gate.inFlight <= limits.maxInFlight);
      assert.ok(gate.buffered <= limits.maxBufferedBytes);
      assert.ok(gate.buffered >= 0 && gate.inFlight >= 0);
    }
    for (const t of tickets) t.close();
    assert.equal(gate.inFlight, 0);
    assert.equal(gate.buffered, 0);
  }));
});
