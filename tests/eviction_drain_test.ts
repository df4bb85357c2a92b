/**
 * The eviction controller against the real API server and the Nova
 * simulator: one simulated cloud and one in-process operator (flags:
 * default 4, CUSTOM_HANA_EXCLUSIVE_HOST=1) for the whole file; every step
 * drains its own hosts. The simulator runs 20 times faster than real time.
 */
import assert from "node:assert/strict";
import type { Eviction } from "../models/mod.ts";
import { EvictionKind } from "../controllers/kinds.ts";
import { ApiError } from "../framework/errors.ts";
import { sharedEnvtest } from "./harness/envtest.ts";
import {
  type DrainEnv,
  maxOverlap,
  migratedTwice,
  sampleInFlight,
  serversOn,
  startDrainEnv,
  uniqueSuffix,
  waitFor,
} from "./harness/eviction_env.ts";
import type { ScenarioInput } from "./harness/nova_sim/mod.ts";

const EVENTS = {
  group: "",
  version: "v1",
  plural: "events",
  kind: "Event",
  namespaced: true,
} as const;

const s = uniqueSuffix();
const H = {
  first: `first-${s}`,
  many: `many-${s}`,
  hana: `hana-${s}`,
  errors: `errors-${s}`,
  states: `states-${s}`,
  churn: `churn-${s}`,
  gate: `gate-${s}`,
  reenable: `reenable-${s}`,
  maint: `maint-${s}`,
  foreign: `foreign-${s}`,
  dup: `dup-${s}`,
  vanished: `vanished-${s}`,
  unregistered: `unregistered-${s}`,
};

const SOURCE = { ramMb: 1_000_000, vcpus: 1024 };
const scenario: ScenarioInput = {
  seed: 5,
  timeScale: 20,
  hosts: [
    { name: `dst1-${s}`, ramMb: 8_000_000, vcpus: 8192 },
    { name: `dst2-${s}`, ramMb: 8_000_000, vcpus: 8192 },
    { name: H.first, ...SOURCE, maxConcurrentLiveMigrations: 8 },
    { name: H.many, ...SOURCE, maxConcurrentLiveMigrations: 2 },
    {
      name: H.hana,
      ...SOURCE,
      maxConcurrentLiveMigrations: 8,
      traits: ["CUSTOM_HANA_EXCLUSIVE_HOST"],
    },
    { name: H.errors, ...SOURCE, maxConcurrentLiveMigrations: 8 },
    { name: H.states, ...SOURCE, maxConcurrentLiveMigrations: 8 },
    { name: H.churn, ...SOURCE },
    { name: H.gate, ...SOURCE, maxConcurrentLiveMigrations: 8 },
    { name: H.reenable, ...SOURCE },
    { name: H.maint, ...SOURCE },
    {
      name: H.foreign,
      ...SOURCE,
      enabled: false,
      disabledReason: "hardware check",
    },
    { name: H.dup, ...SOURCE },
  ],
  serverGroups: [
    { host: H.first, count: 5, namePrefix: "first", ramMb: [4096] },
    {
      host: H.many,
      count: 40,
      namePrefix: "many",
      ramMb: [2048, 4096, 8192],
    },
    { host: H.hana, count: 4, namePrefix: "hana", ramMb: [2048] },
    { host: H.churn, count: 6, namePrefix: "churn", ramMb: [8192] },
    { host: H.gate, count: 2, namePrefix: "gate" },
    { host: H.reenable, count: 1, namePrefix: "reen" },
    { host: H.maint, count: 1, namePrefix: "maint" },
    { host: H.foreign, count: 1, namePrefix: "foreign" },
    { host: H.dup, count: 3, namePrefix: "dup", ramMb: [16384] },
  ],
  servers: [
    { name: "ok1", host: H.errors, ramMb: 2048 },
    { name: "ok2", host: H.errors, ramMb: 2048 },
    { name: "ok3", host: H.errors, ramMb: 2048 },
    { name: "ok4", host: H.errors, ramMb: 2048 },
    { name: "broken", host: H.errors, status: "ERROR" },
    { name: "flaky", host: H.errors, ramMb: 4096 },
    { name: "off", host: H.states, status: "SHUTOFF" },
    { name: "paused", host: H.states, status: "PAUSED" },
    { name: "suspended", host: H.states, status: "SUSPENDED" },
  ],
  faults: { liveMigrationFailure: [{ server: "flaky", times: 10 }] },
};

function condition(ev: Eviction, type: string) {
  return ev.status?.conditions?.find((c) => c.type === type);
}

async function finished(e: DrainEnv, name: string, timeoutMs = 60_000) {
  return await waitFor(`Eviction ${name} finished`, async () => {
    const ev = await e.eviction(name);
    return ev.status?.finishedAt === undefined ? undefined : ev;
  }, timeoutMs);
}

async function evicting(
  e: DrainEnv,
  name: string,
  reason: string,
  timeoutMs = 30_000,
) {
  return await waitFor(`Eviction ${name} Evicting/${reason}`, async () => {
    const ev = await e.eviction(name);
    return condition(ev, "Evicting")?.reason === reason ? ev : undefined;
  }, timeoutMs);
}

function records(e: DrainEnv, host: string) {
  return e.sim.state().migrations.filter((m) => m.source === host)
    .sort((a, b) => a.createdAt - b.createdAt || a.id - b.id);
}

function nameOf(e: DrainEnv, id: string): string {
  return e.sim.state().servers.find((x) => x.id === id)?.name ?? id;
}

function hostState(e: DrainEnv, host: string) {
  const h = e.sim.state().hosts.find((x) => x.name === host);
  assert.ok(h !== undefined, `no simulator host ${host}`);
  return h;
}

Deno.test({
  name: "eviction: drains against the API server and the Nova simulator",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const env = await sharedEnvtest();
    const e = await startDrainEnv({
      env,
      scenario,
      concurrency: "4",
      traitConcurrency: ["CUSTOM_HANA_EXCLUSIVE_HOST=1"],
      // No retry window: the async-failing VM below is out of retries
      // after maxAttempts (the window is tested on its own).
      planOptions: { retryWindowMs: 0 },
    });
    try {
      await t.step(
        "5 VMs with limit 3 start exactly 3 in the first pass",
        async () => {
          await e.hypervisor(H.first);
          await e.evict(`first-${s}`, H.first, 3);
          const ev = await finished(e, `first-${s}`);
          const recs = records(e, H.first);
          assert.equal(recs.length, 5);
          const firstEnd = Math.min(
            ...recs.slice(0, 3).map((r) => r.updatedAt),
          );
          // The first three were started together, before any slot freed;
          // the fourth only once one had.
          assert.ok(recs.slice(0, 3).every((r) => r.createdAt < firstEnd));
          assert.ok((recs[3]?.createdAt ?? 0) >= firstEnd);
          assert.equal(maxOverlap(e.sim, [H.first]), 3);
          assert.equal(ev.status?.migratedCount, 5);
          assert.equal(ev.status?.effectiveLimit, 3);
          assert.equal(ev.status?.limitSource, "eviction");
          assert.deepEqual(serversOn(e.sim, H.first), []);
          const host = hostState(e, H.first);
          assert.equal(host.enabled, false);
          assert.equal(host.disabledReason, `evictor: test first-${s}`);

          // What users see: Events, metrics, logs with Nova's request ids.
          const reasons = await waitFor("the drain's events", async () => {
            const list = await e.client.list(EVENTS, { namespace: "default" });
            const mine = (list.items as Array<
              { involvedObject?: { name?: string }; reason?: string }
            >).filter((x) => x.involvedObject?.name === `first-${s}`)
              .map((x) => x.reason ?? "");
            return mine.includes("DrainFinished") ? new Set(mine) : undefined;
          });
          for (
            const r of [
              "DrainStarted",
              "MigrationsStarted",
              "MigrationsCompleted",
            ]
          ) {
            assert.ok(reasons.has(r), `no ${r} event`);
          }
          const metrics = await e.operator.metrics.registry.metrics();
          assert.match(
            metrics,
            /evictor_migrations_started_total\{kind="live"\} \d+/,
          );
          assert.match(
            metrics,
            /evictor_nova_calls_total\{call="liveMigrate",method="POST",route="\/servers\/\{id\}\/action",outcome="ok"\}/,
          );
          assert.match(
            metrics,
            /evictor_migration_duration_seconds_count\{kind="live"\}/,
          );
          const started = e.logs.map((l) => JSON.parse(l)).filter((l) =>
            l.msg === "migration started" && l.hypervisor === H.first
          );
          assert.equal(started.length, 5);
          assert.ok(
            started.every((l) =>
              typeof l.requestId === "string" && l.requestId !== ""
            ),
          );
        },
      );

      await t.step(
        "40 VMs with limit 4 and Nova's per-host limit 2 never exceed 4 in flight",
        async () => {
          await e.hypervisor(H.many);
          const sampler = sampleInFlight(e.sim, [H.many]);
          await e.evict(`many-${s}`, H.many);
          const ev = await finished(e, `many-${s}`, 90_000);
          const sampled = sampler.stop();
          const exact = maxOverlap(e.sim, [H.many]);
          assert.ok(sampled.max <= 4, `sampled ${sampled.max} in flight`);
          assert.ok(exact <= 4, `${exact} in flight at once (records)`);
          assert.ok(exact >= 3, `only ${exact} at once: not parallel`);
          // Nova held some of ours queued (its limit is 2): they counted as
          // in flight, or more than 4 would have been started.
          assert.ok(sampled.maxQueued >= 1, "Nova never queued one of ours");
          assert.equal(ev.status?.migratedCount, 40);
          assert.deepEqual(serversOn(e.sim, H.many), []);
          assert.deepEqual(migratedTwice(e.sim, [H.many]), []);
        },
      );

      await t.step(
        "default 4 with CUSTOM_HANA_EXCLUSIVE_HOST=1 drains one at a time",
        async () => {
          await e.hypervisor(H.hana);
          await e.evict(`hana-${s}`, H.hana);
          const ev = await finished(e, `hana-${s}`);
          assert.equal(ev.status?.effectiveLimit, 1);
          assert.equal(ev.status?.limitSource, "flags");
          assert.equal(maxOverlap(e.sim, [H.hana]), 1);
          assert.equal(records(e, H.hana).length, 4);
          assert.deepEqual(serversOn(e.sim, H.hana), []);
        },
      );

      await t.step(
        "an ERROR VM and an async-failing VM do not stop the others",
        async () => {
          await e.hypervisor(H.errors);
          await e.evict(`errors-${s}`, H.errors);
          const ev = await evicting(e, `errors-${s}`, "Failed", 60_000);
          const left = serversOn(e.sim, H.errors).map((id) => nameOf(e, id))
            .sort();
          assert.deepEqual(left, ["broken", "flaky"]);
          assert.equal(ev.status?.migratedCount, 4);
          const failed = new Map(
            (ev.status?.failed ?? []).map((f) => [nameOf(e, f.id), f]),
          );
          assert.equal(failed.get("flaky")?.attempts, 3);
          assert.ok(failed.has("broken"));
          assert.equal(condition(ev, "MigratingInstance")?.reason, "Failed");
          const accepted = e.sim.counters().migrationsAccepted;
          const id = (n: string) =>
            e.sim.state().servers.find((x) => x.name === n)?.id ?? n;
          assert.equal(accepted[id("flaky")], 3);
          assert.equal(accepted[id("broken")], undefined);
          for (const n of ["ok1", "ok2", "ok3", "ok4"]) {
            assert.equal(accepted[id(n)], 1, n);
          }
        },
      );

      await t.step(
        "SHUTOFF moves cold (VERIFY_RESIZE confirmed), PAUSED live, SUSPENDED is reported",
        async () => {
          await e.hypervisor(H.states);
          await e.evict(`states-${s}`, H.states);
          // Only the SUSPENDED VM is left and none failed: it waits for a
          // person (never "Failed" beside 0 failed), naming the VM.
          const ev = await evicting(
            e,
            `states-${s}`,
            "WaitingForPerson",
            60_000,
          );
          const byName = new Map(
            records(e, H.states).map((r) => [nameOf(e, r.serverId), r]),
          );
          assert.equal(byName.get("off")?.type, "migration");
          assert.equal(byName.get("off")?.status, "confirmed");
          assert.equal(byName.get("paused")?.type, "live-migration");
          assert.equal(byName.get("paused")?.status, "completed");
          assert.equal(byName.has("suspended"), false);
          const off = e.sim.state().servers.find((x) => x.name === "off");
          assert.equal(off?.status, "SHUTOFF");
          assert.notEqual(off?.host, H.states);
          assert.deepEqual(
            (ev.status?.skipped ?? []).map((x) => nameOf(e, x.id)),
            ["suspended"],
          );
          const suspendedId = ev.status?.skipped?.[0]?.id ?? "";
          assert.match(
            condition(ev, "Evicting")?.message ?? "",
            new RegExp(
              `waiting for a person: .*${suspendedId} \\(SUSPENDED needs a person\\)`,
            ),
          );
          assert.equal(ev.status?.failed?.length ?? 0, 0);
          assert.equal(ev.status?.migratedCount, 2);
        },
      );

      await t.step(
        "a VM deleted mid-drain and one arriving mid-drain",
        async () => {
          await e.hypervisor(H.churn);
          await e.evict(`churn-${s}`, H.churn, 1);
          await waitFor(
            "the first churn migration",
            () => records(e, H.churn).length > 0 ? true : undefined,
          );
          const started = new Set(
            records(e, H.churn).map((r) => r.serverId),
          );
          const victim = serversOn(e.sim, H.churn).find((id) =>
            !started.has(id)
          );
          assert.ok(victim !== undefined);
          e.sim.deleteServer(victim);
          const arrival = e.sim.addServer({
            name: `arrival-${s}`,
            host: H.churn,
            ramMb: 2048,
          });
          const ev = await finished(e, `churn-${s}`);
          const accepted = e.sim.counters().migrationsAccepted;
          assert.equal(accepted[victim], undefined);
          assert.equal(accepted[arrival.id], 1);
          assert.equal(ev.status?.migratedCount, 6);
          assert.deepEqual(serversOn(e.sim, H.churn), []);
          assert.equal(maxOverlap(e.sim, [H.churn]), 1);
        },
      );

      await t.step("TraitsUpdated False makes it wait", async () => {
        await e.hypervisor(H.gate, { traitsUpdated: "False" });
        await e.evict(`gate-${s}`, H.gate);
        const waiting = await evicting(e, `gate-${s}`, "Waiting");
        assert.match(
          condition(waiting, "Evicting")?.message ?? "",
          /starts held: .*TraitsUpdated is False/,
        );
        // Many passes' worth of time: nothing starts, but the host is disabled.
        await new Promise((r) => setTimeout(r, 1000));
        assert.equal(records(e, H.gate).length, 0);
        assert.equal(hostState(e, H.gate).enabled, false);
        await e.setTraitsUpdated(H.gate, "True");
        const ev = await finished(e, `gate-${s}`);
        assert.equal(ev.status?.migratedCount, 2);
      });

      await t.step(
        "deleting the Eviction re-enables the compute service only when evictor disabled it",
        async () => {
          await e.hypervisor(H.reenable);
          await e.hypervisor(H.maint, { maintenance: "manual" });
          await e.hypervisor(H.foreign);
          for (const h of [H.reenable, H.maint, H.foreign]) {
            await e.evict(`del-${h}`, h);
          }
          for (const h of [H.reenable, H.maint, H.foreign]) {
            await finished(e, `del-${h}`);
            assert.equal(hostState(e, h).enabled, false);
            await e.client.delete(EvictionKind, `del-${h}`);
          }
          for (const h of [H.reenable, H.maint, H.foreign]) {
            await waitFor(`Eviction del-${h} gone`, async () => {
              try {
                await e.eviction(`del-${h}`);
                return undefined;
              } catch (err) {
                if (err instanceof ApiError && err.status === 404) return true;
                throw err;
              }
            });
          }
          assert.equal(hostState(e, H.reenable).enabled, true);
          assert.equal(hostState(e, H.maint).enabled, false, "in maintenance");
          const foreign = hostState(e, H.foreign);
          assert.equal(foreign.enabled, false);
          assert.equal(foreign.disabledReason, "hardware check");
        },
      );

      await t.step(
        "two Evictions of one hypervisor: only the oldest drains",
        async () => {
          await e.hypervisor(H.dup);
          await e.evict(`dup-a-${s}`, H.dup, 1);
          await e.evict(`dup-b-${s}`, H.dup);
          const b = await evicting(e, `dup-b-${s}`, "Duplicate");
          assert.match(condition(b, "Evicting")?.message ?? "", /dup-a-/);
          const a = await finished(e, `dup-a-${s}`);
          assert.equal(a.status?.migratedCount, 3);
          const b2 = await finished(e, `dup-b-${s}`);
          assert.equal(b2.status?.migratedCount ?? 0, 0);
          assert.equal(maxOverlap(e.sim, [H.dup]), 1);
          assert.deepEqual(migratedTwice(e.sim, [H.dup]), []);
        },
      );

      await t.step(
        "preflight: a host Nova never knew ends with nothing drained (NotInNova), a registered one it lost fails",
        async () => {
          await e.hypervisor(H.unregistered, { registered: false });
          await e.hypervisor(H.vanished, { registered: true });
          await e.evict(`unreg-${s}`, H.unregistered);
          await e.evict(`vanished-${s}`, H.vanished);
          const ok = await finished(e, `unreg-${s}`);
          // nothing drained: not Succeeded, its own reason
          assert.deepEqual(
            [
              condition(ok, "Evicting")?.reason,
              condition(ok, "Evicting")?.message,
            ],
            [
              "NotInNova",
              `nothing drained: Nova has no compute service named ${H.unregistered}`,
            ],
          );
          assert.equal(
            condition(ok, "PreflightChecksSucceeded")?.reason,
            "NotRegistered",
          );
          // Hypervisor status syncs wake it; Nova is not asked again before
          // the slow finished check (60 poll intervals).
          const asked: string[] = [];
          const off = e.sim.onCall((c) => {
            if (
              c.key.includes("/os-services") &&
              c.search.includes(H.unregistered)
            ) asked.push(c.key);
          });
          for (let i = 0; i < 5; i++) {
            await e.setTraitsUpdated(H.unregistered, i % 2 ? "True" : "False");
            await new Promise((r) => setTimeout(r, 150));
          }
          off();
          assert.deepEqual(asked, [], "the unregistered host was asked again");
          const bad = await waitFor(
            "the vanished host's preflight",
            async () => {
              const ev = await e.eviction(`vanished-${s}`);
              const c = condition(ev, "PreflightChecksSucceeded");
              return c?.status === "False" ? ev : undefined;
            },
          );
          assert.equal(
            condition(bad, "PreflightChecksSucceeded")?.reason,
            "HypervisorNotFound",
          );
          assert.equal(condition(bad, "Evicting")?.reason, "Failed");
        },
      );
    } finally {
      await e.stop();
    }
  },
});
