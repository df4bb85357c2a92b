import assert from "node:assert/strict";
import fc from "fast-check";
import { Registry } from "prom-client";
import { ManualClock } from "./clock.ts";
import { WorkQueue } from "./queue.ts";
import { WorkQueueMetricFamilies } from "./workqueue_metrics.ts";
import { metricSum } from "../tests/_monitoring.ts";
import { queueOpArb } from "../tests/_queue_ops.ts";

/** The value of one queue's series as scraped from `registry`. */
async function value(
  registry: Registry,
  name: string,
  queue = "evictions",
): Promise<number> {
  return metricSum(
    await registry.metrics(),
    name,
    `{name="${queue}",controller="${queue}"}`,
  );
}

function setup() {
  const registry = new Registry();
  const clock = new ManualClock(1_000_000);
  const families = new WorkQueueMetricFamilies(registry);
  let name = "evictions";
  const q = new WorkQueue({
    clock,
    metrics: families.forQueue(() => name, clock),
    backoff: { baseMs: 5, maxMs: 100 },
  });
  return { registry, clock, q, rename: (n: string) => name = n };
}

Deno.test("workqueue metrics: client-go's names, labels and values through a key's life", async () => {
  const { registry, clock, q } = setup();
  const v = (name: string) => value(registry, name);
  // Two adds of a waiting key are one add; it waits 2 s, is worked 3 s.
  q.add("a");
  clock.advance(500);
  q.add("a");
  assert.equal(await v("workqueue_adds_total"), 1);
  assert.equal(await v("workqueue_depth"), 1);
  clock.advance(1500);
  assert.equal(q.tryGet(), "a");
  assert.equal(await v("workqueue_depth"), 0);
  assert.equal(await v("workqueue_queue_duration_seconds_count"), 1);
  assert.equal(await v("workqueue_queue_duration_seconds_sum"), 2);
  clock.advance(3000);
  // In progress: unfinished work and the longest processor read it at scrape.
  assert.equal(await v("workqueue_unfinished_work_seconds"), 3);
  assert.equal(await v("workqueue_longest_running_processor_seconds"), 3);
  // Added while processed: an add and depth now, handed out after done.
  q.add("a");
  assert.equal(await v("workqueue_adds_total"), 2);
  assert.equal(await v("workqueue_depth"), 1);
  q.done("a");
  assert.equal(await v("workqueue_work_duration_seconds_count"), 1);
  assert.equal(await v("workqueue_work_duration_seconds_sum"), 3);
  assert.equal(await v("workqueue_unfinished_work_seconds"), 0);
  assert.equal(await v("workqueue_adds_total"), 2, "done re-queues, no add");
  assert.equal(q.tryGet(), "a");
  // It waited from its add during processing.
  assert.equal(await v("workqueue_queue_duration_seconds_sum"), 2);
  q.done("a");
  // Every delayed add is a retry in client-go's sense; the add happens
  // when it is due.
  q.addRateLimited("b");
  q.addAfter("c", 50);
  q.addOutageLimited("d");
  assert.equal(await v("workqueue_retries_total"), 3);
  assert.equal(await v("workqueue_adds_total"), 2);
  clock.advance(10_000);
  assert.equal(await v("workqueue_adds_total"), 5);
  assert.equal(await v("workqueue_depth"), 3);
  // Two in progress: the sum and the longest differ.
  q.tryGet();
  clock.advance(1000);
  q.tryGet();
  clock.advance(1000);
  assert.equal(await v("workqueue_unfinished_work_seconds"), 3);
  assert.equal(await v("workqueue_longest_running_processor_seconds"), 2);
  const text = await registry.metrics();
  // controller-runtime's buckets: 10 ns to 1000 s
  assert.match(
    text,
    /workqueue_queue_duration_seconds_bucket\{le="1e-8",name="evictions",controller="evictions"\} /,
  );
  assert.match(
    text,
    /workqueue_work_duration_seconds_bucket\{le="1000",name="evictions",controller="evictions"\} 2/,
  );
  q.shutdown();
});

Deno.test("workqueue metrics: a waiting worker takes the key at once, with a zero wait", async () => {
  const { registry, q } = setup();
  const taken = q.get();
  q.add("a");
  assert.equal(await taken, "a");
  assert.equal(await value(registry, "workqueue_depth"), 0);
  assert.equal(
    await value(registry, "workqueue_queue_duration_seconds_count"),
    1,
  );
  assert.equal(
    await value(registry, "workqueue_queue_duration_seconds_sum"),
    0,
  );
  q.shutdown();
});

Deno.test("workqueue metrics: the name is read when reported (a controller is named after it is built)", async () => {
  const { registry, q, rename } = setup();
  rename("hypervisors");
  q.add("a");
  assert.equal(
    await value(registry, "workqueue_adds_total", "hypervisors"),
    1,
  );
  assert.equal(await value(registry, "workqueue_adds_total", "evictions"), 0);
  q.shutdown();
});

Deno.test("workqueue metrics: adds - takes = depth, takes - finishes = keys in progress, one retry per delayed add", async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(queueOpArb, { maxLength: 80 }), async (ops) => {
      const { registry, clock, q } = setup();
      const v = (name: string) => value(registry, name);
      const held: string[] = [];
      let delayed = 0;
      for (const op of ops) {
        switch (op.t) {
          case "add":
            q.add(op.key);
            break;
          case "addAfter":
            q.addAfter(op.key, op.ms);
            delayed++;
            break;
          case "rateLimited":
            q.addRateLimited(op.key);
            delayed++;
            break;
          case "forget":
            q.forget(op.key);
            break;
          case "get": {
            const key = q.tryGet();
            if (key !== undefined) held.push(key);
            break;
          }
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
        const adds = await v("workqueue_adds_total");
        const takes = await v("workqueue_queue_duration_seconds_count");
        const finishes = await v("workqueue_work_duration_seconds_count");
        const depth = await v("workqueue_depth");
        assert.equal(adds - takes, depth);
        // waiting keys, plus those added again while processed
        assert.ok(depth >= q.length && depth <= q.length + held.length);
        assert.equal(takes - finishes, held.length);
        assert.equal(await v("workqueue_retries_total"), delayed);
        // each key in progress for at most the time since it was taken
        const longest = await v("workqueue_longest_running_processor_seconds");
        const unfinished = await v("workqueue_unfinished_work_seconds");
        assert.ok(longest <= unfinished + 1e-9);
        assert.ok(unfinished <= longest * held.length + 1e-9);
      }
      q.shutdown();
    }),
    { numRuns: 200 },
  );
});
