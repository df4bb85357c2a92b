/**
 * Copies that do not converge, end to end against the real cloud of the
 * real-OpenStack lane: the lane's compute driver holds a server's copy
 * unconverged (`lane_unconverged`: remaining bytes hovering at a third of
 * its memory, saved on Nova's migration record as libvirt does), and the
 * drain shows its progress, aborts or force-completes it as its trait's
 * `convergence` says, and a person's `kubectl evictor force-complete` is
 * sent to real Nova. Skipped (ignored) where the lane cannot run.
 *
 * @module
 */
import assert from "node:assert/strict";
import { laneCloud, openNova, type ServerSpec } from "./contract_backends.ts";
import {
  available,
  condition,
  evictingReason,
  evictionYaml,
  type Lane,
  recordsByName,
  until,
  withLane,
  withPolicy,
} from "./lane.ts";
import { sharedEnvtest } from "../harness/envtest.ts";
import { runPlugin } from "../harness/plugin.ts";
import type { Eviction } from "../../models/mod.ts";

/**
 * The issue-39 status fields of an Eviction (shared contract), read
 * loosely: the CRD gains them on the surface helper's branch.
 */
interface ConvergenceStatus {
  inFlight?: {
    id: string;
    migrationId?: string;
    memoryTotalBytes?: number;
    memoryRemainingBytes?: number;
    notConverging?: boolean;
    deadlineAt?: string;
    forceCompleteSentAt?: string;
  }[];
  aborted?: { id: string; tries: number; reason: string }[];
  failed?: { id: string; reason: string }[];
  actions?: {
    server: string;
    action: string;
    requestedBy: string;
    outcome: string;
  }[];
}

function statusOf(ev: Eviction | undefined): ConvergenceStatus {
  return (ev?.status ?? {}) as ConvergenceStatus;
}

const MIB = 1024 * 1024;
/** Held on its first attempt only: the retry converges. */
const HELD_ONCE = {
  lane_unconverged: "true",
  lane_unconverged_times: "1",
  lane_copy_seconds: "2",
} as const;
/** Held on every attempt. */
const HELD = { lane_unconverged: "true", lane_copy_seconds: "2" } as const;

/** Runs `fn` with `trait` on `host`'s resource provider in Placement. */
async function withTrait(
  host: string,
  trait: string,
  fn: () => Promise<void>,
): Promise<void> {
  const b = await openNova(await laneCloud(), []);
  const rp = await b.placement.findResourceProvider(host);
  assert.ok(rp, `Placement knows ${host}`);
  await b.placement.ensureCustomTrait(trait);
  await b.placement.setTraits(rp, (t) => [...new Set([...t, trait])]);
  try {
    await fn();
  } finally {
    await b.placement.setTraits(rp, (t) => t.filter((x) => x !== trait))
      .catch(() => {});
    await b.close();
  }
}

/** A policy whose one trait entry carries `convergence`. */
function traitPolicy(trait: string, convergence: Record<string, unknown>) {
  return {
    traitLimits: [{ trait, maxConcurrentMigrations: 2, convergence }],
  };
}

/**
 * Waits for the server's copy to hover on real Nova (its record running,
 * remaining bytes saved, not falling to 0) and for the Eviction to show
 * that progress in `status.inFlight[]`.
 */
async function progressShown(lane: Lane, host: string, name: string) {
  const id = lane.b.servers.get(name) as string;
  const total = 512 * MIB;
  const record = await until(
    `${name}'s copy hovering on Nova`,
    async () => {
      const r = await lane.b.raw(
        "compute",
        "GET",
        `/servers/${id}/migrations`,
        {
          microversion: "2.80",
        },
      );
      const m = (r.body as {
        migrations: {
          memory_total_bytes: number | null;
          memory_remaining_bytes: number | null;
        }[];
      }).migrations?.[0];
      return m && m.memory_total_bytes === total &&
          (m.memory_remaining_bytes ?? total) < total / 2
        ? m
        : undefined;
    },
    300_000,
    lane.diagnostics,
  );
  assert.ok((record.memory_remaining_bytes ?? 0) > 0);
  return await until(
    `${name}'s progress in status.inFlight`,
    async () => {
      const f = statusOf(await lane.eviction(host)).inFlight?.find((x) =>
        x.id === id
      );
      return f?.memoryRemainingBytes !== undefined && f.memoryRemainingBytes > 0
        ? f
        : undefined;
    },
    120_000,
    lane.diagnostics,
  );
}

Deno.test({
  name:
    "lane: convergence Abort by trait: progress in status, the held copy aborted on real Nova and retried alone until it moves; one held on every try left for a person",
  ignore: !available,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const host = "node001";
    const trait = "CUSTOM_EVICTOR_LANE_ABORT";
    const servers: ServerSpec[] = [
      { name: "once", host, size: "small", migration: HELD_ONCE },
      { name: "never", host, size: "small", migration: HELD },
      { name: "plain", host, size: "small" },
    ];
    await withTrait(host, trait, async () => {
      await withLane(servers, [host], [
        "--eviction-concurrency=2",
      ], async (lane) => {
        await withPolicy(
          lane,
          traitPolicy(trait, {
            onTimeout: "Abort",
            completionTimeoutPerGiB: 120,
            progressTimeoutSeconds: 20,
            maxAbortedTries: 2,
          }),
          async () => {
            const { b } = lane;
            const id = (n: string) => b.servers.get(n) as string;
            await lane.kubectl(
              ["create", "-f", "-"],
              evictionYaml(host, lane.labels, "hana-upgrade"),
            );
            const shown = await progressShown(lane, host, "once");
            assert.equal(shown.memoryTotalBytes, 512 * MIB);
            const nc = await until(
              "NotConverging on the Eviction",
              async () => {
                const e = await lane.eviction(host);
                return condition(e, "NotConverging")?.status === "True"
                  ? e
                  : undefined;
              },
              300_000,
              lane.diagnostics,
            );
            assert.ok(nc);
            const ev = await evictingReason(lane, host, "Failed");
            const st = statusOf(ev);
            // "never": aborted on each of its two tries, then left.
            const never = st.failed?.find((f) => f.id === id("never"));
            assert.ok(never, JSON.stringify(st.failed));
            assert.equal(
              st.aborted?.find((a) => a.id === id("never"))?.tries,
              2,
              JSON.stringify(st.aborted),
            );
            const recs = await recordsByName(lane, host);
            assert.deepEqual(
              recs.get("never")?.map((m) => m.status),
              ["cancelled", "cancelled"],
            );
            // "once": aborted, retried, moved.
            assert.deepEqual(
              recs.get("once")?.map((m) => m.status),
              ["cancelled", "completed"],
            );
            assert.deepEqual(
              recs.get("plain")?.map((m) => m.status),
              ["completed"],
            );
            for (const n of ["once", "plain"]) {
              const s = await b.nova.getServer(id(n));
              assert.notEqual(s.host, host, n);
              assert.equal(s.status, "ACTIVE", n);
            }
            const left = await b.nova.getServer(id("never"));
            assert.equal(left.host, host);
            assert.equal(left.status, "ACTIVE");
            // The retry went alone: no other copy from the host beside it.
            const retry = recs.get("once")?.[1];
            const others = [...(recs.get("plain") ?? [])];
            for (const m of others) {
              assert.ok(
                retry === undefined ||
                  (m.updated_at ?? "") <= retry.created_at,
                `plain still copying when once's retry started: ${
                  JSON.stringify([m, retry])
                }`,
              );
            }
          },
        );
      });
    });
  },
});

Deno.test({
  name:
    "lane: convergence ForceComplete by trait: force_complete sent once to real Nova, the copy pauses and ends on another host",
  ignore: !available,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const host = "node001";
    const trait = "CUSTOM_EVICTOR_LANE_FORCE";
    await withTrait(host, trait, async () => {
      await withLane(
        [
          { name: "db", host, size: "small", migration: HELD },
        ],
        [host],
        [],
        async (lane) => {
          await withPolicy(
            lane,
            traitPolicy(trait, {
              onTimeout: "ForceComplete",
              completionTimeoutPerGiB: 60,
              progressTimeoutSeconds: 20,
              forceCompleteTimeoutSeconds: 120,
            }),
            async () => {
              const { b } = lane;
              const id = b.servers.get("db") as string;
              await lane.kubectl(
                ["create", "-f", "-"],
                evictionYaml(host, lane.labels, "hana-upgrade"),
              );
              await progressShown(lane, host, "db");
              const sent = await until(
                "forceCompleteSentAt in status.inFlight",
                async () => {
                  const f = statusOf(await lane.eviction(host)).inFlight?.find(
                    (x) => x.id === id,
                  );
                  return f?.forceCompleteSentAt;
                },
                300_000,
                lane.diagnostics,
              );
              assert.ok(sent);
              await evictingReason(lane, host, "Succeeded");
              const recs = (await recordsByName(lane, host)).get("db") ?? [];
              assert.deepEqual(recs.map((m) => m.status), ["completed"]);
              const s = await b.nova.getServer(id);
              assert.notEqual(s.host, host);
              assert.equal(s.status, "ACTIVE");
              assert.equal(s.powerState, 1);
              // Once: Nova's instance actions hold one force-complete.
              const actions = await b.raw(
                "compute",
                "GET",
                `/servers/${id}/os-instance-actions`,
                { microversion: "2.84" },
              );
              const forced = (actions.body as {
                instanceActions: { action: string }[];
              }).instanceActions.filter((a) =>
                a.action === "live_migration_force_complete"
              );
              assert.equal(forced.length, 1, JSON.stringify(actions.body));
            },
          );
        },
      );
    });
  },
});

Deno.test({
  name:
    "lane: kubectl evictor force-complete HOST VM against real Nova: recorded on the Eviction with who asked, sent, the VM moves",
  ignore: !available,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const host = "node003";
    await withLane(
      [
        { name: "stuck", host, size: "small", migration: HELD },
      ],
      [host],
      [],
      async (lane) => {
        // Report only: the drain itself never acts on the copy.
        await withPolicy(lane, {
          convergence: {
            onTimeout: "Report",
            completionTimeoutPerGiB: 3600,
            progressTimeoutSeconds: 3600,
          },
        }, async () => {
          const { b } = lane;
          const id = b.servers.get("stuck") as string;
          await lane.kubectl(
            ["create", "-f", "-"],
            evictionYaml(host, lane.labels, "person-decides"),
          );
          await progressShown(lane, host, "stuck");
          const env = await sharedEnvtest();
          const cloud = await laneCloud();
          const dir = await Deno.makeTempDir({ prefix: "evictor-lane-fc-" });
          try {
            await Deno.writeTextFile(`${dir}/clouds.yaml`, cloud.cloudsYaml());
            const run = await runPlugin(["force-complete", host, id], {
              KUBECONFIG: env.kubeconfigPath,
              OS_CLIENT_CONFIG_FILE: `${dir}/clouds.yaml`,
              OS_CLOUD: "lane",
            });
            assert.equal(run.code, 0, run.stderr);
          } finally {
            await Deno.remove(dir, { recursive: true });
          }
          const ev = await evictingReason(lane, host, "Succeeded");
          const st = statusOf(ev);
          const asked = st.actions?.find((a) => a.server === id);
          assert.equal(asked?.action, "ForceComplete", JSON.stringify(st));
          assert.equal(asked?.outcome, "Sent");
          assert.ok(asked?.requestedBy);
          const recs = (await recordsByName(lane, host)).get("stuck") ?? [];
          assert.deepEqual(recs.map((m) => m.status), ["completed"]);
          const s = await b.nova.getServer(id);
          assert.notEqual(s.host, host);
          assert.equal(s.status, "ACTIVE");
        });
      },
    );
  },
});
