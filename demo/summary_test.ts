import assert from "node:assert/strict";
import fc from "fast-check";
import {
  comparePredictions,
  drainCalls,
  type MigrationRecord,
  renderNotifications,
  renderPredictions,
  renderSummary,
  renderWave,
  summariseDrain,
  summariseWave,
  worstError,
} from "./summary.ts";

const m = (
  over: Partial<MigrationRecord>,
): MigrationRecord => ({
  serverId: "vm",
  source: "n1",
  type: "live-migration",
  status: "completed",
  createdAt: 0,
  updatedAt: 1000,
  copyMs: 1000,
  ...over,
});

Deno.test("summariseDrain: table", () => {
  const serial = summariseDrain("n1", "Eviction", 1, 0, [
    m({ createdAt: 0, updatedAt: 1000 }),
    m({ createdAt: 1000, updatedAt: 2000 }),
  ]);
  assert.equal(serial.lowerBoundSeconds, 2);
  assert.equal(serial.makespanSeconds, 2);
  assert.equal(serial.ratio, 1);

  const failedAndOther = summariseDrain("n1", "Eviction", 2, 500, [
    m({ status: "error", updatedAt: 400 }),
    m({ createdAt: 500, updatedAt: 3000, copyMs: 2000 }),
    m({ source: "n2", updatedAt: 99_000 }),
  ]);
  assert.equal(failedAndOther.migrations, 2);
  assert.equal(failedAndOther.failures, 1);
  assert.equal(failedAndOther.lowerBoundSeconds, 2.5); // the longest one
  assert.equal(failedAndOther.makespanSeconds, 3);

  const none = summariseDrain("n9", "x", 4, 0, []);
  assert.deepEqual([none.migrations, none.ratio], [0, 1]);
  assert.throws(() => summariseDrain("n1", "x", 0, 0, []), RangeError);
});

Deno.test("summariseDrain: no schedule beats the lower bound", () => {
  // Any actual schedule that respects the limit has makespan >= bound.
  fc.assert(fc.property(
    fc.array(fc.integer({ min: 1, max: 10_000 }), {
      minLength: 1,
      maxLength: 30,
    }),
    fc.integer({ min: 1, max: 8 }),
    (copies, limit) => {
      // Greedy list scheduling on `limit` slots.
      const slots = Array.from({ length: limit }, () => 0);
      const records = copies.map((copyMs) => {
        const i = slots.indexOf(Math.min(...slots));
        const start = slots[i] ?? 0;
        slots[i] = start + copyMs;
        return m({ createdAt: start, updatedAt: start + copyMs, copyMs });
      });
      const row = summariseDrain("n1", "x", limit, 0, records);
      assert.ok(row.ratio >= 1 - 1e-9, `ratio ${row.ratio}`);
    },
  ));
});

Deno.test("renderSummary", () => {
  const text = renderSummary(
    [summariseDrain("node001", "Eviction", 4, 0, [
      m({ source: "node001", updatedAt: 60_000, copyMs: 60_000 }),
    ])],
    { total: 50, drain: 30 },
    1,
  );
  assert.match(
    text,
    /^HOST\s+DRAINED BY\s+LIMIT\s+MIGRATIONS\s+FAILED\s+MAKESPAN\s+LOWER BOUND\s+RATIO$/m,
  );
  assert.match(
    text,
    /^node001\s+Eviction\s+4\s+1\s+0\s+60\.0 s\s+60\.0 s\s+1\.00$/m,
  );
  assert.match(
    text,
    /50 in all .*; 30 by the drains .*, 30\.00 per migrated VM/,
  );
});

Deno.test("renderSummary: one clock and unit with the predictions (seconds on evictor's clock)", () => {
  const rows = [summariseDrain("node001", "Eviction", 1, 0, [
    m({ source: "node001", updatedAt: 240_000, copyMs: 200_000 }),
  ])];
  const table: [string, number | undefined, RegExp][] = [
    [
      "a real cloud: Nova's seconds",
      undefined,
      /\s240\.0 s\s+200\.0 s\s+1\.20$/m,
    ],
    ["the simulator 20x faster", 20, /\s12\.0 s\s+10\.0 s\s+1\.20$/m],
  ];
  for (const [name, timeScale, row] of table) {
    const text = renderSummary(
      rows,
      { total: 1, drain: 1 },
      1,
      timeScale === undefined ? {} : { timeScale },
    );
    assert.match(text, row, name);
    assert.doesNotMatch(text, /\bmin\b/, name);
  }
  assert.throws(
    () => renderSummary(rows, { total: 1, drain: 1 }, 1, { timeScale: 0 }),
    { name: "RangeError", message: "timeScale must be > 0, got 0" },
  );
});

Deno.test("drainCalls counts servers and migrations only", () => {
  assert.equal(
    drainCalls({
      "GET /compute/v2.1/servers/detail": 4,
      "POST /compute/v2.1/servers/{id}/action": 2,
      "GET /compute/v2.1/os-migrations": 3,
      "GET /compute/v2.1/os-hypervisors/detail": 7,
      "PUT /placement/resource_providers/{uuid}/traits": 5,
      "POST /identity/v3/auth/tokens": 1,
    }),
    9,
  );
});

Deno.test("comparePredictions: actual, error and history per drain", () => {
  const ev = (
    host: string,
    startedAt: string,
    end: string | undefined,
    predicted: number | undefined,
    failed = false,
  ) => ({
    spec: { hypervisor: host },
    status: {
      startedAt,
      ...(predicted === undefined
        ? {}
        : { predictedMakespanSeconds: predicted }),
      ...(end === undefined ? {} : failed
        ? {
          conditions: [{
            type: "Evicting",
            status: "False",
            reason: "Failed",
            lastTransitionTime: end,
          }],
        }
        : { finishedAt: end }),
    },
  });
  const rows = comparePredictions([
    // Ended with a VM for a person: its end is the condition's transition.
    ev("a", "2026-01-01T00:00:00Z", "2026-01-01T00:00:40Z", 400, true),
    ev("b", "2026-01-01T00:00:45Z", "2026-01-01T00:01:25Z", 44),
    ev("c", "2026-01-01T00:00:45Z", "2026-01-01T00:01:05Z", 15),
    ev("d", "2026-01-01T00:00:10Z", undefined, 30), // still running
  ]);
  assert.deepEqual(rows.map((r) => [r.host, r.actualSeconds, r.history]), [
    ["a", 40, 0],
    ["b", 40, 1],
    ["c", 20, 1],
    ["d", undefined, 0],
  ]);
  assert.equal(rows[0]?.error, 9);
  assert.ok(Math.abs((rows[1]?.error ?? 0) - 0.1) < 1e-9);
  assert.equal(rows[2]?.error, -0.25);
  assert.equal(worstError(rows)?.host, "a");
  const text = renderPredictions(rows);
  assert.match(
    text,
    /a .*400\.0 s .*40\.0 s .*\+900% .*no history: --default-migration-rate/,
  );
  assert.match(text, /b .*rate from 1 ended drain$/m);
  assert.match(
    text,
    /Worst prediction error: \+900% \(a\)/,
  );
  assert.match(
    renderPredictions(rows.slice(3)),
    /No drain has both a prediction and an end/,
  );
});

Deno.test("worstError: the largest |error| among drains with an error", () => {
  fc.assert(fc.property(
    fc.array(fc.record({
      host: fc.string(),
      predictedSeconds: fc.constant(1),
      actualSeconds: fc.constant(1),
      error: fc.option(fc.double({ min: -10, max: 10, noNaN: true }), {
        nil: undefined,
      }),
      history: fc.nat(3),
    })),
    (rows) => {
      const worst = worstError(rows);
      const eligible = rows.filter((r) => r.error !== undefined);
      if (eligible.length === 0) return worst === undefined;
      const max = Math.max(...eligible.map((r) => Math.abs(r.error ?? 0)));
      return worst !== undefined && Math.abs(worst.error ?? 0) === max;
    },
  ));
});

Deno.test("summariseWave: moved twice counts completed migrations per VM, anywhere", () => {
  const w = summariseWave({
    hosts: ["n1", "n2"],
    migrations: [
      m({ serverId: "a" }),
      // failed, then retried: moved once
      m({ serverId: "b", status: "error" }),
      m({ serverId: "b" }),
      // landed on a host drained after it, moved again
      m({ serverId: "c", source: "n1" }),
      m({ serverId: "c", source: "n3" }),
    ],
    migrated: 3,
    novaCalls: 9,
    budget: 5,
    budgetPeak: 5,
  });
  assert.deepEqual(w.movedTwice, ["c"]);
  assert.equal(w.novaCallsPerVm, 3);
  const text = renderWave(w);
  assert.match(text, /The wave \(n1, n2, 3 VMs migrated\)/);
  assert.match(text, /moved more than once in the whole run: 1 \(c\)/);
  assert.match(text, /in flight at once .*: 5, cluster budget 5/);
  assert.match(text, /per migrated VM while it ran: 3\.00/);
  assert.equal(
    summariseWave({
      hosts: [],
      migrations: [],
      migrated: 0,
      novaCalls: 4,
      budget: 1,
      budgetPeak: 0,
    }).novaCallsPerVm,
    undefined,
  );
});

Deno.test("renderNotifications: counts from /metrics, or why the drains polled", () => {
  const metrics = [
    "# HELP evictor_nova_notifications_received_total Nova's notifications",
    'evictor_nova_notifications_received_total{event_type="instance.update"} 7',
    'evictor_nova_notifications_received_total{event_type="instance.live_migration_post.end"} 2',
    "evictor_nova_notifications_received_total_other 100",
    'evictor_drain_looks_total{source="view"} 5',
    'evictor_drain_looks_total{source="nova"} 3',
    "evictor_notification_view_diffs_total 1",
  ].join("\n");
  const on = renderNotifications(
    { url: "amqp://x", where: "RabbitMQ" },
    metrics,
  );
  assert.match(on, /on \(RabbitMQ\): 9 notifications received/);
  assert.match(
    on,
    /5 drain passes planned from a host's notified view, 3 read Nova/,
  );
  assert.match(on, /wrong about: 1$/);
  assert.match(
    renderNotifications({ url: "amqp://x", where: "RabbitMQ" }, ""),
    /could not be read/,
  );
  assert.match(
    renderNotifications(
      { polling: "rabbitmq-server is not installed" },
      metrics,
    ),
    /off, the drains polled \(rabbitmq-server is not installed\)/,
  );
});
