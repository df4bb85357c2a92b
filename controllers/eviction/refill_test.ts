import assert from "node:assert/strict";
import fc from "fast-check";
import type { EvictionStatus } from "../../models/mod.ts";
import type {
  DepartedServer,
  ObservedMigration,
  ObservedServer,
} from "./observation.ts";
import { departedIds, planPass } from "./plan.ts";
import {
  completedLiveMoves,
  probeVerdict,
  recordStates,
  type RefillInput,
} from "./refill.ts";
import {
  entry,
  HOST,
  input,
  mig,
  novaTime,
  OPTIONS,
  T0,
  vm,
} from "./_plan_test_util.ts";

const away = (id: number, uuid: string, status = "completed") =>
  mig(id, uuid, status, { destCompute: "node007" });

function refillInput(overrides: Partial<RefillInput> = {}): RefillInput {
  return {
    host: HOST,
    servers: [vm("a"), vm("b"), vm("c")],
    records: recordStates([away(1, "a", "running")], HOST),
    migrations: [away(1, "a", "running")],
    status: { inFlight: [entry("a", -30)] },
    nowMs: T0.getTime(),
    gracePeriodMs: 60_000,
    ...overrides,
  };
}

Deno.test("probeVerdict: table", async (t) => {
  const cases: Array<{
    name: string;
    over: Partial<RefillInput>;
    want: "idle" | "refill" | "full";
    view?: string[];
  }> = [
    { name: "nothing changed", over: {}, want: "idle" },
    {
      name: "progress within the open states is no news",
      over: { migrations: [away(1, "a", "post-migrating")] },
      want: "idle",
    },
    {
      name: "a live migration completed away: refill without it",
      over: { migrations: [away(1, "a")] },
      want: "refill",
      view: ["b", "c"],
    },
    {
      name: "a new open record (our own start) only adds to in flight",
      over: {
        migrations: [away(1, "a", "running"), away(2, "b", "queued")],
        status: { inFlight: [entry("a", -30), entry("b", -1)] },
      },
      want: "refill",
      view: ["a", "b", "c"],
    },
    {
      name: "an async failure needs the server list",
      over: { migrations: [away(1, "a", "error")] },
      want: "full",
    },
    {
      name: "a cold migration finished (VERIFY_RESIZE) needs a full pass",
      over: {
        records: recordStates(
          [mig(1, "a", "migrating", { migrationType: "migration" })],
          HOST,
        ),
        migrations: [
          mig(1, "a", "finished", {
            migrationType: "migration",
            destCompute: "node007",
          }),
        ],
      },
      want: "full",
    },
    {
      name: "completed without a destination proves nothing",
      over: { migrations: [mig(1, "a", "completed")] },
      want: "full",
    },
    {
      name: "completed onto the host itself proves nothing",
      over: { migrations: [mig(1, "a", "completed", { destCompute: HOST })] },
      want: "full",
    },
    {
      name: "a trigger past its grace period without a record",
      over: {
        migrations: [away(1, "a")],
        status: { inFlight: [entry("a", -30), entry("b", -120)] },
      },
      want: "full",
    },
    {
      name: "a trigger in its grace period without a record is fine",
      over: {
        migrations: [away(1, "a")],
        status: { inFlight: [entry("a", -30), entry("b", -5)] },
      },
      want: "refill",
      view: ["b", "c"],
    },
    {
      name: "arrivals from other hosts are not news",
      over: {
        migrations: [
          away(1, "a", "running"),
          mig(5, "x", "completed", {
            sourceCompute: "node001",
            destCompute: HOST,
          }),
        ],
      },
      want: "idle",
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const v = probeVerdict(refillInput(c.over));
      assert.equal(v.kind, c.want);
      if (v.kind === "refill" && c.view !== undefined) {
        assert.deepEqual(v.servers.map((s) => s.id), c.view);
      }
    });
  }
});

Deno.test("completedLiveMoves: only the latest record of each VM counts", () => {
  const moves = completedLiveMoves([
    away(1, "a"),
    mig(2, "a", "running", { createdAt: novaTime(5), destCompute: "n9" }),
    away(3, "b"),
    mig(4, "c", "completed", { migrationType: "migration", destCompute: "n" }),
  ], HOST);
  assert.deepEqual([...moves], [["b", "node007"]]);
});

const IDS = ["v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7"];
const OPEN = ["queued", "preparing", "running", "post-migrating"];
const SETTLED = ["completed", "completed", "error", "cancelled", "finished"];

/** Random history of a host: records before and now, triggers in status. */
const scenario = fc.record({
  onHost: fc.subarray(IDS, { minLength: 1 }),
  records: fc.array(
    fc.record({
      vm: fc.constantFrom(...IDS),
      before: fc.option(fc.constantFrom(...OPEN, ...SETTLED), {
        nil: undefined,
      }),
      nowOpen: fc.boolean(),
      now: fc.constantFrom(...OPEN, ...SETTLED, "completed", "completed"),
      cold: fc.constantFrom(false, false, false, true),
      dest: fc.constantFrom("node007", "node007", "node007", HOST, null),
    }),
    { maxLength: 6 },
  ),
  triggers: fc.array(
    fc.record({ vm: fc.constantFrom(...IDS), ageS: fc.nat(80) }),
    { maxLength: 3 },
  ),
  limit: fc.integer({ min: 1, max: 6 }),
});

Deno.test("property: a refill never starts a VM that a migration or a fresh trigger holds", () => {
  let refills = 0;
  fc.assert(
    fc.property(scenario, (s) => {
      const servers: ObservedServer[] = s.onHost.map((id) => vm(id));
      const before: ObservedMigration[] = [];
      const now: ObservedMigration[] = [];
      s.records.forEach((r, i) => {
        const base = {
          createdAt: novaTime(-100 + i),
          destCompute: r.dest,
          ...(r.cold ? { migrationType: "migration" } : {}),
        };
        if (r.before !== undefined) {
          before.push(mig(i + 1, r.vm, r.before, base));
        }
        // A settled record never reopens.
        const settledBefore = r.before !== undefined &&
          !OPEN.includes(r.before);
        const status = settledBefore ? r.before ?? r.now : r.now;
        now.push(mig(i + 1, r.vm, status, base));
      });
      const seen = new Set<string>();
      const inFlight = s.triggers.filter((t) => {
        if (seen.has(t.vm)) return false;
        seen.add(t.vm);
        return true;
      }).map((t) => entry(t.vm, -t.ageS));
      const status: EvictionStatus = {
        inFlight,
        inFlightCount: inFlight.length,
        outstandingInstances: s.onHost,
      };
      const v = probeVerdict({
        host: HOST,
        servers,
        records: recordStates(before, HOST),
        migrations: now,
        status,
        nowMs: T0.getTime(),
        gracePeriodMs: OPTIONS.gracePeriodMs,
      });
      if (v.kind !== "refill") return;
      refills++;
      const moved = completedLiveMoves(now, HOST);
      const viewIds = new Set(v.servers.map((x) => x.id));
      for (const id of viewIds) {
        assert.ok(s.onHost.includes(id), "the view only shrinks");
        assert.ok(!moved.has(id), "a VM that moved away is not in the view");
      }
      // Plan as the reconciler does: departed VMs known from records only.
      const departed: DepartedServer[] = [];
      for (const id of departedIds(status, v.servers, now, HOST)) {
        const dest = moved.get(id);
        if (dest === undefined) continue;
        departed.push({ id, server: vm(id, 1024, { host: dest }) });
      }
      const plan = planPass(input({
        servers: v.servers,
        migrations: now,
        departed,
        status,
        limit: s.limit,
      }));
      const open = new Set(
        now.filter((m) => OPEN.includes(m.status)).map((m) => m.instanceUuid),
      );
      const fresh = new Set(
        inFlight.filter((e) =>
          T0.getTime() - Date.parse(e.startedAt) <= OPTIONS.gracePeriodMs
        ).map((e) => e.id),
      );
      for (const st of plan.start) {
        assert.ok(!open.has(st.id), `${st.id} has an open migration`);
        assert.ok(!fresh.has(st.id), `${st.id} was just triggered`);
        assert.ok(!moved.has(st.id), `${st.id} already left`);
      }
    }),
    { numRuns: 1000 },
  );
  // Not vacuous: many generated histories do call for a refill.
  assert.ok(refills > 30, `only ${refills} refills generated`);
});
