import assert from "node:assert/strict";
import type { ObservedMigration } from "./observation.ts";
import {
  fitDuration,
  MAX_POLL_FACTOR,
  Pacer,
  recordDurationMs,
  requeueDelay,
  type RequeueInput,
} from "./requeue.ts";

const T0 = Date.parse("2026-11-29T12:00:00Z");
const nova = (ms: number) => new Date(ms).toISOString().replace("Z", "");

function record(
  id: number,
  vm: string,
  status: string,
  createdMs: number,
): ObservedMigration {
  return {
    id,
    instanceUuid: vm,
    migrationType: "live-migration",
    status,
    sourceCompute: "h",
    createdAt: nova(createdMs),
    updatedAt: nova(createdMs),
  };
}

function input(
  pacer: Pacer,
  over: Partial<RequeueInput> & Pick<RequeueInput, "next">,
): number {
  return requeueDelay(pacer, {
    key: "e",
    migrations: [],
    servers: [],
    nowMs: T0,
    pollIntervalMs: 2000,
    rate: 1,
    waitingForSlot: true,
    ...over,
  });
}

Deno.test("fitDuration: a line through duration against RAM", () => {
  assert.equal(fitDuration([]), undefined);
  const one = fitDuration([{ ramMb: 2000, durationMs: 4000 }]);
  assert.deepEqual(one, { a: 0, b: 2 });
  const line = fitDuration([
    { ramMb: 1000, durationMs: 4500 },
    { ramMb: 2000, durationMs: 5500 },
    { ramMb: 4000, durationMs: 7500 },
  ]);
  assert.ok(line !== undefined);
  assert.ok(Math.abs(line.a - 3500) < 1e-6 && Math.abs(line.b - 1) < 1e-9);
});

Deno.test("requeueDelay: the poll interval without a model", () => {
  const next = {
    inFlight: [{ id: "a", kind: "live" as const, startedAt: nova(T0) + "Z" }],
  };
  assert.equal(input(new Pacer(), { next }), 2000);
});

Deno.test("requeueDelay: polls when the next running migration should finish", () => {
  const pacer = new Pacer();
  pacer.observe("e", 1000, 10_000); // 10 s per GB
  const next = {
    inFlight: [
      { id: "a", kind: "live" as const, startedAt: nova(T0 - 4000) + "Z" },
      { id: "b", kind: "live" as const, startedAt: nova(T0 - 1000) + "Z" },
    ],
  };
  const delay = input(pacer, {
    next,
    pollIntervalMs: 2000,
    migrations: [
      record(1, "a", "running", T0 - 4000),
      record(2, "b", "running", T0 - 1000),
    ],
    servers: [
      { id: "a", flavor: { ramMb: 1000 } },
      { id: "b", flavor: { ramMb: 1000 } },
    ],
  });
  assert.equal(delay, 6000);
  // Scaled clock: 10 clock ms per real ms.
  const scaled = input(pacer, {
    next,
    rate: 10,
    migrations: [record(1, "a", "running", T0 - 4000)],
    servers: [{ id: "a", flavor: { ramMb: 1000 } }],
  });
  assert.ok(scaled <= 2000, `${scaled}`);
});

Deno.test("requeueDelay: queued migrations wait for a running one; overdue ones are looked at soon", () => {
  const pacer = new Pacer();
  pacer.observe("e", 1000, 10_000);
  const next = {
    inFlight: [
      { id: "a", kind: "live" as const, startedAt: nova(T0 - 12_000) + "Z" },
      { id: "q", kind: "live" as const, startedAt: nova(T0 - 11_000) + "Z" },
    ],
  };
  const delay = input(pacer, {
    next,
    migrations: [
      record(1, "a", "running", T0 - 12_000),
      record(2, "q", "queued", T0 - 11_000),
    ],
    servers: [
      { id: "a", flavor: { ramMb: 1000 } },
      { id: "q", flavor: { ramMb: 1000 } },
    ],
  });
  // a is overdue by 2 s: looked at again after 3 % of 10 s.
  assert.equal(delay, 300);
  assert.ok(delay <= 2000 * MAX_POLL_FACTOR);
});

Deno.test("recordDurationMs: from creation (or first running after a queue) to the last update", () => {
  const pacer = new Pacer();
  const done = {
    ...record(1, "a", "completed", T0),
    updatedAt: nova(T0 + 9000),
  };
  assert.equal(recordDurationMs(pacer, "e", done), 9000);
  pacer.noteRecord("e", "a", "queued", T0, T0 + 1000);
  pacer.noteRecord("e", "a", "running", T0, T0 + 3000);
  assert.equal(recordDurationMs(pacer, "e", done), 6000);
  assert.equal(
    recordDurationMs(pacer, "e", record(2, "b", "running", T0)),
    undefined,
  );
});
