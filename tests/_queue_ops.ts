/**
 * Random operations on a work queue, for the property tests of the queue
 * (framework/queue_test.ts) and of its metrics
 * (framework/workqueue_metrics_test.ts).
 *
 * @module
 */
import fc from "fast-check";

/** One operation: an add (now, delayed, backed off), a forget, a worker taking or finishing a key, time passing. */
export type QueueOp =
  | { t: "add"; key: string }
  | { t: "addAfter"; key: string; ms: number }
  | { t: "rateLimited"; key: string }
  | { t: "forget"; key: string }
  | { t: "get" }
  | { t: "done"; index: number }
  | { t: "advance"; ms: number };

const keyArb = fc.constantFrom("a", "b", "c", "d");

/**
 * Operations on four keys; `done` finishes the held key at `index` modulo
 * the number held.
 *
 * @example
 * ```ts
 * import fc from "fast-check";
 * import { queueOpArb } from "./_queue_ops.ts";
 * const [op] = fc.sample(queueOpArb, 1);
 * console.assert(op !== undefined && typeof op.t === "string");
 * ```
 */
export const queueOpArb: fc.Arbitrary<QueueOp> = fc.oneof(
  fc.record({ t: fc.constant("add" as const), key: keyArb }),
  fc.record({
    t: fc.constant("addAfter" as const),
    key: keyArb,
    ms: fc.integer({ min: 0, max: 200 }),
  }),
  fc.record({ t: fc.constant("rateLimited" as const), key: keyArb }),
  fc.record({ t: fc.constant("forget" as const), key: keyArb }),
  fc.record({ t: fc.constant("get" as const) }),
  fc.record({ t: fc.constant("done" as const), index: fc.nat(10) }),
  fc.record({
    t: fc.constant("advance" as const),
    ms: fc.integer({ min: 0, max: 300 }),
  }),
);
