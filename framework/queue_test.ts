import assert from "node:assert/strict";
import fc from "fast-check";
import { ManualClock } from "./clock.ts";
import { WorkQueue } from "./queue.ts";
import { backoffDelay, KeyBackoff } from "./backoff.ts";
import { queueOpArb } from "../tests/_queue_ops.ts";

Deno.test("queue: a key is never handed to two workers, adds collapse, nothing is lost", () => {
  fc.assert(
    fc.property(fc.array(queueOpArb, { maxLength: 120 }), (ops) => {
      const clock = new ManualClock(0);
      const q = new WorkQueue({ clock, backoff: { baseMs: 5, maxMs: 100 } });
      const held: string[] = [];
      // keys added (now or via a timer) after the last time a worker took them
      const wanted = new Set<string>();
      const take = () => {
        const key = q.tryGet();
        if (key === undefined) return;
        assert.ok(!held.includes(key), `key ${key} handed out twice`);
        held.push(key);
        wanted.delete(key);
      };
      for (const op of ops) {
        switch (op.t) {
          case "add":
            q.add(op.key);
            wanted.add(op.key);
            break;
          case "addAfter":
            q.addAfter(op.key, op.ms);
            wanted.add(op.key);
            break;
          case "rateLimited":
            q.addRateLimited(op.key);
            wanted.add(op.key);
            break;
          case "forget":
            q.forget(op.key);
            break;
          case "get":
            take();
            break;
          case "done": {
            const key = held[op.index % Math.max(1, held.length)];
            if (key !== undefined) {
              held.splice(held.indexOf(key), 1);
              q.done(key);
            }
            break;
          }
          case "advance":
            clock.advance(op.ms);
            break;
        }
        // de-duplication: the queue never holds a key twice
        assert.ok(q.length <= 4);
        assert.equal(q.processing.size, held.length);
      }
      // liveness: finish everything and drain; every wanted key comes out
      for (const key of [...held]) q.done(key);
      held.length = 0;
      clock.advance(1_000);
      const seen = new Set<string>();
      for (;;) {
        const key = q.tryGet();
        if (key === undefined) break;
        assert.ok(!seen.has(key), `key ${key} queued twice`);
        seen.add(key);
        q.done(key);
        wanted.delete(key);
      }
      assert.deepEqual([...wanted], []);
      q.shutdown();
    }),
    { numRuns: 300 },
  );
});

Deno.test("backoff: delays stay within [base, max] and grow until forgotten", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 1000 }),
      fc.integer({ min: 1, max: 2_000_000 }),
      fc.array(fc.boolean(), { maxLength: 80 }),
      (baseMs, extra, steps) => {
        const maxMs = baseMs + extra;
        const b = new KeyBackoff({ baseMs, maxMs });
        let last = 0;
        for (const fail of steps) {
          if (fail) {
            const d = b.next("k");
            assert.ok(d >= baseMs && d <= maxMs, `delay ${d} out of bounds`);
            assert.ok(d >= last, "delay shrank without a success");
            last = d;
          } else {
            b.forget("k");
            assert.equal(b.failures("k"), 0);
            last = 0;
          }
        }
      },
    ),
  );
  assert.equal(backoffDelay(0), 5);
  assert.equal(backoffDelay(18), 1_000_000);
  assert.throws(
    () => backoffDelay(-1),
    /failures must be an integer >= 0, got -1/,
  );
  assert.throws(
    () => new KeyBackoff({ baseMs: 10, maxMs: 5 }),
    /baseMs=10 maxMs=5/,
  );
});

Deno.test("queue: addAfter keeps the earliest deadline and rate limiting backs off", () => {
  const clock = new ManualClock(0);
  const q = new WorkQueue({ clock });
  q.addAfter("a", 100);
  q.addAfter("a", 50);
  q.addAfter("a", 500);
  clock.advance(49);
  assert.equal(q.length, 0);
  clock.advance(1);
  assert.equal(q.tryGet(), "a");
  q.done("a");
  assert.equal(q.addRateLimited("b"), 5);
  assert.equal(q.addRateLimited("b"), 10);
  clock.advance(5);
  assert.equal(q.tryGet(), "b");
  q.done("b");
  q.forget("b");
  assert.equal(q.addRateLimited("b"), 5);
  q.shutdown();
  assert.equal(clock.pending, 0);
});

Deno.test("queue: get waits for work and resolves undefined on shutdown", async () => {
  const q = new WorkQueue();
  const p = q.get();
  q.add("x");
  assert.equal(await p, "x");
  const p2 = q.get();
  q.shutdown();
  assert.equal(await p2, undefined);
});

Deno.test("queue: an aborted get takes no key", async () => {
  const q = new WorkQueue();
  const ac = new AbortController();
  const p = q.get(ac.signal);
  ac.abort();
  assert.equal(await p, undefined);
  q.add("k");
  assert.equal(
    q.length,
    1,
    "the key went to the queue, not to the gone waiter",
  );
  assert.equal(await q.get(), "k");
  q.shutdown();
});

Deno.test("queue: addRateLimited waits at least what the failure asked, and still counts the failure", () => {
  const clock = new ManualClock(0);
  const q = new WorkQueue({ clock });
  // the failure asks for 1 s; the backoff would say 5 ms
  assert.equal(q.addRateLimited("k", 1_000), 1_000);
  clock.advance(999);
  assert.equal(q.tryGet(), undefined);
  clock.advance(1);
  assert.equal(q.tryGet(), "k");
  q.done("k");
  assert.equal(q.failures("k"), 1);
  // a shorter request than the backoff leaves the backoff's delay
  assert.equal(q.addRateLimited("k", 1), 10);
  q.shutdown();
});
