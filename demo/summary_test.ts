import assert from "node:assert/strict";
import fc from "fast-check";
import {
  comparePredictions,
  drainCalls,
  hostFigures,
  type MigrationRecord,
  renderHosts,
  renderNotifications,
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
  // the same VM failed, then moved: retried, not failed at the end
  assert.equal(failedAndOther.retried, 1);
  assert.equal(failedAndOther.failures, 0);
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

Deno.test("summariseDrain: retried then moved is not failed; failed at the end is", () => {
  const rows: [string, MigrationRecord[], number, number][] = [
    // name, records, retried, failed
    ["moved first time", [m({ serverId: "a" })], 0, 0],
    [
      "failed, retried, moved",
      [
        m({ serverId: "a", status: "error", createdAt: 0 }),
        m({ serverId: "a", createdAt: 2000, updatedAt: 3000 }),
      ],
      1,
      0,
    ],
    [
      "failed twice, then moved",
      [
        m({ serverId: "a", status: "error", createdAt: 0 }),
        m({ serverId: "a", status: "failed", createdAt: 1000 }),
        m({ serverId: "a", createdAt: 2000, updatedAt: 3000 }),
      ],
      1,
      0,
    ],
    [
      "failed, never moved",
      [
        m({ serverId: "a", status: "error" }),
        m({ serverId: "b" }),
      ],
      0,
      1,
    ],
    [
      "moved, came back, failed the second time",
      [
        m({ serverId: "a", createdAt: 0 }),
        m({ serverId: "a", status: "error", createdAt: 5000 }),
      ],
      0,
      1,
    ],
    [
      "another host's failure does not count",
      [
        m({ serverId: "a", source: "n2", status: "error" }),
        m({ serverId: "b" }),
      ],
      0,
      0,
    ],
  ];
  for (const [name, records, retried, failed] of rows) {
    const row = summariseDrain("n1", "x", 2, 0, records);
    assert.deepEqual([row.retried, row.failures], [retried, failed], name);
  }
});

Deno.test("hostFigures: one makespan and one lower bound per host, on evictor's clock", () => {
  // node002 of a demo run: records in the simulator's time (20x faster),
  // the Eviction's actual and predicted on evictor's clock.
  const rows = [
    summariseDrain("node002", "wave", 4, 0, [
      m({
        source: "node002",
        serverId: "a",
        status: "error",
        updatedAt: 20_000,
      }),
      m({
        source: "node002",
        serverId: "a",
        createdAt: 200_000,
        updatedAt: 380_000,
        copyMs: 180_000,
      }),
    ]),
    summariseDrain("node009", "x", 1, 0, [
      m({ source: "node009", updatedAt: 40_000, copyMs: 40_000 }),
    ]),
  ];
  const predictions = [
    {
      host: "node002",
      predictedSeconds: 21,
      actualSeconds: 19.5,
      error: 0,
      history: 1,
    },
    {
      host: "node009",
      predictedSeconds: undefined,
      actualSeconds: undefined,
      error: undefined,
      history: 0,
    },
  ];
  const [a, b] = hostFigures(rows, predictions, 20);
  // the makespan is the Eviction's actual, the same the error is taken on
  assert.equal(a?.makespanSeconds, 19.5);
  assert.equal(a?.lowerBoundSeconds, 9);
  assert.ok(Math.abs((a?.error ?? 0) - (21 - 19.5) / 19.5) < 1e-12);
  assert.ok(Math.abs((a?.ratio ?? 0) - 19.5 / 9) < 1e-12);
  assert.deepEqual([a?.retried, a?.failures], [1, 0]);
  // no end yet: the records' span, no error
  assert.equal(b?.makespanSeconds, 2);
  assert.equal(b?.error, undefined);
  assert.throws(() => hostFigures(rows, predictions, 0), RangeError);

  const text = renderHosts([a!, b!], { total: 50, drain: 30 }, 3);
  const header = text.split("\n")[0] ?? "";
  assert.match(
    header,
    /^HOST\s+DRAINED BY\s+LIMIT\s+MIGRATIONS\s+RETRIED\s+FAILED\s+LOWER BOUND\s+MAKESPAN\s+RATIO\s+PREDICTED\s+ERROR\s+PREDICTED FROM$/,
  );
  assert.match(
    text,
    /^node002\s+wave\s+4\s+2\s+1\s+0\s+9\.0 s\s+19\.5 s\s+2\.17\s+21\.0 s\s+\+8%\s+1 ended drain$/m,
  );
  assert.match(
    text,
    /^node009\s+x\s+1\s+1\s+0\s+0\s+2\.0 s\s+2\.0 s\s+1\.00\s+-\s+-\s+the defaults \(no ended drain\)$/m,
  );
  // each host's makespan appears once in the whole text
  assert.equal(text.match(/19\.5 s/g)?.length, 1);
  assert.match(text, /30 by the drains .*10\.00 per migrated VM/);
  assert.match(text, /Worst prediction error: \+8% \(node002\)\.$/);
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
