import assert from "node:assert/strict";
import type { EvictionStatus } from "../../models/mod.ts";
import { type Plan, type PlanInput, planPass } from "./plan.ts";
import { splitStarts } from "./plan_steps.ts";
import {
  at,
  entry,
  failure,
  HOST,
  input,
  mig,
  novaTime,
  OPTIONS,
  T0,
  vm,
} from "../../tests/harness/plan_fixtures.ts";
import { departedIds } from "../../openstack/informer/nova_records.ts";

interface Row {
  name: string;
  input: PlanInput;
  /** Started ids, in order. */
  start?: string[];
  kinds?: Record<string, "live" | "cold">;
  /** next.inFlight ids. */
  inFlight?: string[];
  /** plan.failed: [id, attempts]. */
  failedNow?: Array<[string, number]>;
  /** next.failed ids. */
  failedStatus?: string[];
  skipped?: string[];
  done?: string[];
  gone?: string[];
  confirm?: string[];
  abort?: Array<[string, string]>;
  stuck?: string[];
  newlyFound?: string[];
  outstanding?: string[];
  finished?: boolean;
  blocked?: boolean;
  evicting?: [string, string];
  migratingInstance?: [string, string];
  check?: (plan: Plan) => void;
}

/** A status from a previous pass that knew `ids` as outstanding. */
function seen(ids: string[], extra: EvictionStatus = {}): EvictionStatus {
  return {
    outstandingInstances: ids,
    startedAt: at(-3600).toISOString(),
    ...extra,
  };
}

function condition(plan: Plan, type: string): [string, string] | undefined {
  const c = plan.next.conditions?.find((x) => x.type === type);
  return c === undefined ? undefined : [c.status, c.reason];
}

const rows: Row[] = [
  {
    name: "an empty host on the first pass is finished at once",
    input: input(),
    start: [],
    finished: true,
    evicting: ["False", "Succeeded"],
    check: (plan) => assert.equal(plan.next.finishedAt, T0.toISOString()),
  },
  {
    name: "5 VMs with limit 3 start exactly the 3 largest",
    input: input({
      limit: 3,
      servers: [
        vm("a", 1024),
        vm("b", 4096),
        vm("c", 2048),
        vm("d", 8192),
        vm("e", 512),
      ],
    }),
    start: ["d", "b", "c"],
    inFlight: ["b", "c", "d"],
    evicting: ["True", "Running"],
    migratingInstance: ["True", "Migrating"],
  },
  {
    name: "equal RAM is ordered by id for determinism",
    input: input({
      limit: 2,
      servers: [vm("c", 2048), vm("a", 2048), vm("b", 2048)],
    }),
    start: ["a", "b"],
  },
  {
    name: "ACTIVE and PAUSED move live, SHUTOFF cold",
    input: input({
      servers: [
        vm("a", 3, { status: "ACTIVE" }),
        vm("p", 2, { status: "PAUSED" }),
        vm("s", 1, { status: "SHUTOFF" }),
      ],
    }),
    start: ["a", "p", "s"],
    kinds: { a: "live", p: "live", s: "cold" },
  },
  {
    name: "a MIGRATING VM counts in flight and takes a slot",
    input: input({
      limit: 2,
      servers: [
        vm("m", 1, { status: "MIGRATING", taskState: "migrating" }),
        vm("a"),
        vm("b"),
      ],
    }),
    start: ["a"],
    inFlight: ["a", "m"],
  },
  {
    name: "a RESIZE VM counts in flight (cold)",
    input: input({
      limit: 1,
      servers: [
        vm("r", 1, { status: "RESIZE", taskState: "resize_migrating" }),
        vm("a"),
      ],
    }),
    start: [],
    inFlight: ["r"],
    check: (plan) => assert.equal(plan.next.inFlight?.[0]?.kind, "cold"),
  },
  {
    name: "task_state migrating on an ACTIVE VM counts in flight",
    input: input({
      limit: 1,
      servers: [vm("t", 1, { taskState: "migrating" }), vm("a")],
    }),
    start: [],
    inFlight: ["t"],
  },
  {
    name: "task_state resize_prep on a SHUTOFF VM counts in flight",
    input: input({
      limit: 1,
      servers: [
        vm("t", 1, { status: "SHUTOFF", taskState: "resize_prep" }),
        vm("a"),
      ],
    }),
    start: [],
    inFlight: ["t"],
  },
  ...[
    "queued",
    "preparing",
    "running",
    "post-migrating",
    "accepted",
    "pre-migrating",
    "migrating",
  ]
    .map((status): Row => ({
      name:
        `a migration record '${status}' counts in flight (Nova's own queue included)`,
      input: input({
        limit: 2,
        servers: [vm("q", 9999), vm("a")],
        migrations: [mig(7, "q", status)],
      }),
      start: ["a"],
      inFlight: ["a", "q"],
      check: (plan) =>
        assert.equal(
          plan.next.inFlight?.find((e) => e.id === "q")?.migrationId,
          "7",
        ),
    })),
  {
    name:
      "a trigger within the grace period counts in flight though Nova shows nothing",
    input: input({
      limit: 2,
      servers: [vm("g", 9999), vm("a"), vm("b")],
      status: seen(["g", "a", "b"], { inFlight: [entry("g", -30)] }),
    }),
    start: ["a"],
    inFlight: ["a", "g"],
  },
  {
    name:
      "in-flight VMs from earlier passes bound new starts (inFlight + started <= limit)",
    input: input({
      limit: 3,
      servers: [
        vm("x", 1, { status: "MIGRATING" }),
        vm("y"),
        vm("a"),
        vm("b"),
        vm("c"),
      ],
      migrations: [mig(1, "y", "queued")],
      status: seen(["x", "y", "a", "b", "c"], {
        inFlight: [entry("x", -100), entry("y", -100)],
      }),
    }),
    start: ["a"],
    inFlight: ["a", "x", "y"],
  },
  {
    name:
      "a trigger past the grace period with nothing in Nova is planned again, never charged",
    input: input({
      servers: [vm("g")],
      status: seen(["g"], { inFlight: [entry("g", -120)] }),
    }),
    start: ["g"],
    failedNow: [],
    inFlight: ["g"],
    evicting: ["True", "Running"],
  },
  {
    name:
      "lowering the limit starts nothing and aborts nothing until in flight drops",
    input: input({
      limit: 2,
      servers: ["a", "b", "c", "d"].map((id) =>
        vm(id, 1, { status: "MIGRATING" })
      )
        .concat([vm("e")]),
      options: {
        ...OPTIONS,
        migrationTimeoutSeconds: 3600,
        abortStuckMigrations: true,
      },
    }),
    start: [],
    abort: [],
    inFlight: ["a", "b", "c", "d"],
    check: (plan) => assert.equal(plan.next.effectiveLimit, 2),
  },
  {
    name: "the cluster budget bounds the starts below the limit",
    input: input({
      limit: 4,
      clusterBudgetLeft: 1,
      servers: [vm("a", 1), vm("b", 2)],
    }),
    start: ["b"],
  },
  {
    name: "no cluster budget left: nothing starts and the drain is Waiting",
    input: input({ clusterBudgetLeft: 0, servers: [vm("a")] }),
    start: [],
    evicting: ["True", "Waiting"],
    check: (plan) =>
      assert.match(
        plan.next.conditions?.find((c) => c.type === "Evicting")?.message ?? "",
        /no cluster budget/,
      ),
  },
  {
    name: "a limit of 0 starts nothing",
    input: input({ limit: 0, servers: [vm("a")] }),
    start: [],
  },
  {
    name:
      "async failure (ACTIVE, record error) counts an attempt and never blocks others",
    input: input({
      servers: [vm("f", 9999), vm("a")],
      migrations: [mig(5, "f", "error", { createdAt: novaTime(-50) })],
      status: seen(["f", "a"], {
        inFlight: [entry("f", -55, { migrationId: "5" })],
      }),
    }),
    start: ["a"],
    failedNow: [["f", 1]],
    failedStatus: ["f"],
    migratingInstance: ["False", "Failed"],
    check: (plan) => {
      assert.equal(plan.next.failed?.[0]?.lastAttemptAt, T0.toISOString());
      assert.match(
        plan.next.failed?.[0]?.reason ?? "",
        /live-migration 5 ended error/,
      );
    },
  },
  {
    name: "a failed VM within its retry delay is not started",
    input: input({
      servers: [vm("f")],
      migrations: [mig(5, "f", "error")],
      status: seen(["f"], { failed: [failure("f", 1, -10)] }),
    }),
    start: [],
    failedNow: [],
    evicting: ["True", "Waiting"],
  },
  {
    name:
      "a failed VM is retried once its delay is over (base * 2^(attempts-1))",
    input: input({
      servers: [vm("f")],
      migrations: [mig(5, "f", "error", { createdAt: novaTime(-200) })],
      status: seen(["f"], { failed: [failure("f", 2, -61)] }),
    }),
    start: ["f"],
    failedNow: [],
    failedStatus: ["f"],
    check: (plan) => assert.equal(plan.start[0]?.attempt, 3),
  },
  {
    name:
      "out of attempts: reported, never started, the drain is Failed when alone",
    input: input({
      servers: [vm("f")],
      migrations: [mig(5, "f", "error")],
      status: seen(["f"], { failed: [failure("f", 3, -10_000)] }),
    }),
    start: [],
    failedStatus: ["f"],
    blocked: true,
    evicting: ["False", "Failed"],
    migratingInstance: ["False", "Failed"],
  },
  {
    name: "the last failed attempt reports exhaustion",
    input: input({
      servers: [vm("f")],
      migrations: [mig(6, "f", "error", { createdAt: novaTime(-50) })],
      status: seen(["f"], {
        failed: [failure("f", 2, -1000)],
        inFlight: [entry("f", -55, { migrationId: "6" })],
      }),
    }),
    start: [],
    failedNow: [["f", 3]],
    check: (plan) => assert.equal(plan.failed[0]?.exhausted, true),
  },
  {
    name:
      "an ERROR VM is failed with its fault message and the others still start",
    input: input({
      servers: [
        vm("e", 9999, { status: "ERROR", fault: { message: "disk gone" } }),
        vm("a"),
      ],
    }),
    start: ["a"],
    failedNow: [["e", 0]],
    failedStatus: ["e"],
    migratingInstance: ["False", "Failed"],
    evicting: ["True", "Running"],
    check: (plan) =>
      assert.equal(plan.next.failed?.[0]?.reason, "ERROR: disk gone"),
  },
  {
    name: "an ERROR VM already reported is not reported again",
    input: input({
      servers: [
        vm("e", 1, { status: "ERROR", fault: { message: "disk gone" } }),
      ],
      status: seen(["e"], {
        failed: [failure("e", 0, -100, "ERROR: disk gone")],
      }),
    }),
    failedNow: [],
    failedStatus: ["e"],
    evicting: ["False", "Failed"],
  },
  {
    name: "our migration leaving the VM in ERROR counts an attempt",
    input: input({
      servers: [vm("e", 1, { status: "ERROR", fault: { message: "libvirt" } })],
      status: seen(["e"], { inFlight: [entry("e", -10)] }),
    }),
    inFlight: [],
    failedNow: [["e", 1]],
  },
  {
    name: "a VM with a failed record that is MIGRATING again is in flight",
    input: input({
      limit: 1,
      servers: [
        vm("f", 1, { status: "MIGRATING", taskState: "migrating" }),
        vm("a"),
      ],
      migrations: [mig(5, "f", "error", { createdAt: novaTime(-300) })],
      status: seen(["f", "a"], { failed: [failure("f", 1, -200)] }),
    }),
    start: [],
    inFlight: ["f"],
    failedNow: [],
  },
  {
    name: "task_state deleting is skipped, never started",
    input: input({ servers: [vm("d", 1, { taskState: "deleting" }), vm("a")] }),
    start: ["a"],
    skipped: ["d"],
  },
  ...["SUSPENDED", "RESCUE", "SHELVED", "SHELVED_OFFLOADED", "VERIFY_RESIZE"]
    .map((status): Row => ({
      name:
        `${status} on the host needs a person: skipped, reported, drain WaitingForPerson when alone`,
      input: input({ servers: [vm("s", 1, { status })] }),
      start: [],
      skipped: ["s"],
      blocked: true,
      evicting: ["False", "WaitingForPerson"],
      check: (plan) =>
        assert.match(plan.skipped[0]?.reason ?? "", /needs a person/),
    })),
  {
    name: "a BUILD VM is busy: not started, looked at again",
    input: input({
      servers: [vm("b", 1, { status: "BUILD", taskState: "spawning" })],
    }),
    start: [],
    skipped: [],
    evicting: ["True", "Waiting"],
    check: (plan) => assert.equal(plan.waiting[0]?.why, "busy"),
  },
  {
    name: "an ACTIVE VM with another task running is busy",
    input: input({ servers: [vm("s", 1, { taskState: "image_snapshot" })] }),
    start: [],
    inFlight: [],
  },
  {
    name: "a VM that appears during the drain joins the queue",
    input: input({
      servers: [vm("a", 1), vm("new", 2)],
      status: seen(["a"]),
    }),
    newlyFound: ["new"],
    start: ["new", "a"],
  },
  {
    name: "a VM that left for another host is done; its entries are dropped",
    input: input({
      servers: [],
      departed: [{ id: "m", server: vm("m", 1, { host: "node007" }) }],
      status: seen(["m"], {
        inFlight: [entry("m", -30)],
        failed: [failure("m", 1, -500)],
        migratedCount: 4,
      }),
    }),
    done: ["m"],
    inFlight: [],
    failedStatus: [],
    finished: true,
    migratingInstance: ["False", "Succeeded"],
    check: (plan) => assert.equal(plan.next.migratedCount, 5),
  },
  {
    name:
      "a VM ACTIVE on its destination whose record still runs holds its slot (real Nova: ~0.3 s before completed)",
    input: input({
      servers: [vm("next", 1)],
      departed: [{ id: "m", server: vm("m", 1, { host: "node007" }) }],
      migrations: [mig(7, "m", "running", { destCompute: "node007" })],
      limit: 1,
      status: seen(["m", "next"], { inFlight: [entry("m", -30)] }),
    }),
    done: [],
    start: [],
    inFlight: ["m"],
  },
  {
    name:
      "a VM that someone else moved away (no start of ours) left, but is not counted as migrated",
    input: input({
      servers: [],
      departed: [{ id: "u", server: vm("u", 1, { host: "node007" }) }],
      status: seen(["u"], { migratedCount: 4 }),
    }),
    done: [],
    outstanding: [],
    finished: true,
    check: (plan) => {
      assert.equal(plan.next.migratedCount, 4);
      assert.deepEqual(plan.movedByOthers, ["u"]);
    },
  },
  {
    name:
      "a migration of someone else's that we only watched (adopted) is not counted as migrated when it lands",
    input: input({
      servers: [],
      departed: [{ id: "w", server: vm("w", 1, { host: "node007" }) }],
      migrations: [mig(9, "w", "completed", { destCompute: "node007" })],
      status: seen(["w"], {
        inFlight: [entry("w", -30, { adopted: true })],
        migratedCount: 2,
      }),
    }),
    done: [],
    inFlight: [],
    check: (plan) => {
      assert.equal(plan.next.migratedCount, 2);
      assert.deepEqual(plan.movedByOthers, ["w"]);
    },
  },
  {
    name: "a VM deleted during the drain (404) is gone, not migrated",
    input: input({
      departed: [{ id: "x", server: null }],
      status: seen(["x"], { migratedCount: 1 }),
    }),
    gone: ["x"],
    done: [],
    check: (plan) => assert.equal(plan.next.migratedCount, 1),
  },
  {
    name: "VERIFY_RESIZE on the destination is confirmed and stays in flight",
    input: input({
      limit: 1,
      servers: [vm("a")],
      departed: [{
        id: "c",
        server: vm("c", 1, { host: "node007", status: "VERIFY_RESIZE" }),
      }],
      status: seen(["c", "a"], {
        inFlight: [entry("c", -100, { kind: "cold" })],
      }),
    }),
    confirm: ["c"],
    inFlight: ["c"],
    start: [],
    done: [],
  },
  {
    name: "a VM still finishing on its destination stays in flight",
    input: input({
      departed: [{
        id: "p",
        server: vm("p", 1, {
          host: "node007",
          status: "MIGRATING",
          taskState: "migrating",
        }),
      }],
      status: seen(["p"], { inFlight: [entry("p", -100)] }),
    }),
    inFlight: ["p"],
    done: [],
    finished: false,
  },
  {
    name: "a VM whose lookup failed keeps its slot and stays outstanding",
    input: input({
      limit: 1,
      servers: [vm("a")],
      status: seen(["l", "a"], { inFlight: [entry("l", -100)] }),
    }),
    inFlight: ["l"],
    start: [],
    outstanding: ["a", "l"],
    check: (plan) =>
      assert.equal(plan.waiting.find((w) => w.id === "l")?.why, "unknown"),
  },
  {
    name:
      "a looked-up VM still on this host (list raced) is treated as on the host",
    input: input({
      departed: [{ id: "r", server: vm("r") }],
      status: seen(["r"]),
    }),
    start: ["r"],
    done: [],
    outstanding: ["r"],
  },
  {
    name:
      "after a restart that lost status, a running record is adopted, not retriggered",
    input: input({
      servers: [vm("a")],
      migrations: [mig(9, "a", "running", { createdAt: novaTime(-40) })],
      status: seen(["a"]),
    }),
    start: [],
    inFlight: ["a"],
    check: (plan) => {
      const e = plan.next.inFlight?.[0];
      assert.equal(e?.migrationId, "9");
      assert.equal(e?.startedAt, at(-40).toISOString());
    },
  },
  {
    name:
      "a retry within grace is not undone by the previous attempt's error record",
    input: input({
      servers: [vm("f")],
      migrations: [mig(5, "f", "error", { createdAt: novaTime(-300) })],
      status: seen(["f"], {
        inFlight: [entry("f", -10)],
        failed: [failure("f", 1, -100)],
      }),
    }),
    start: [],
    inFlight: ["f"],
    failedNow: [],
    check: (plan) => assert.equal(plan.next.failed?.[0]?.attempts, 1),
  },
  {
    name:
      "an error record of a migration this drain did not start charges nothing",
    input: input({
      servers: [vm("f")],
      migrations: [mig(5, "f", "error")],
      status: seen(["f"]),
    }),
    start: ["f"],
    failedNow: [],
  },
  {
    name:
      "a record 'completed' while the VM is still listed past grace is a failed attempt",
    input: input({
      servers: [vm("c")],
      migrations: [mig(5, "c", "completed", { createdAt: novaTime(-100) })],
      status: seen(["c"], {
        inFlight: [entry("c", -100, { migrationId: "5" })],
      }),
    }),
    start: [],
    failedNow: [["c", 1]],
  },
  {
    name: "records of migrations onto this host (other source) are ignored",
    input: input({
      servers: [vm("a")],
      migrations: [mig(5, "a", "running", { sourceCompute: "node007" })],
    }),
    start: ["a"],
  },
  {
    name: "a VM listed twice (pagination) is started once",
    input: input({ servers: [vm("a", 2), vm("a", 2), vm("b", 1)] }),
    start: ["a", "b"],
    outstanding: ["a", "b"],
  },
  {
    name:
      "a migration past the timeout is reported; a running live one aborted when enabled",
    input: input({
      servers: [
        vm("l"),
        vm("c", 1, { status: "RESIZE", taskState: "resize_migrating" }),
      ],
      migrations: [
        mig(3, "l", "running", { createdAt: novaTime(-4000) }),
        mig(4, "c", "migrating", {
          migrationType: "migration",
          createdAt: novaTime(-4000),
        }),
      ],
      status: seen(["l", "c"], {
        inFlight: [
          entry("l", -4000, { migrationId: "3" }),
          entry("c", -4000, { migrationId: "4", kind: "cold" }),
        ],
      }),
      options: {
        ...OPTIONS,
        migrationTimeoutSeconds: 3600,
        abortStuckMigrations: true,
      },
    }),
    stuck: ["c", "l"],
    abort: [["l", "3"]],
  },
  {
    name:
      "a migration Nova still holds queued is never stuck, however long since our start",
    input: input({
      servers: [vm("q", 1, { status: "MIGRATING", taskState: "migrating" })],
      migrations: [mig(5, "q", "queued", { createdAt: novaTime(-4000) })],
      status: seen(["q"], {
        inFlight: [entry("q", -4000, { migrationId: "5" })],
      }),
      options: {
        ...OPTIONS,
        migrationTimeoutSeconds: 3600,
        abortStuckMigrations: true,
      },
    }),
    stuck: [],
    abort: [],
  },
  {
    name:
      "the timeout runs from when the copy was first seen under way, not from our start",
    input: input({
      servers: [
        vm("fresh", 1, { status: "MIGRATING", taskState: "migrating" }),
        vm("old", 1, { status: "MIGRATING", taskState: "migrating" }),
      ],
      migrations: [
        mig(6, "fresh", "running", { createdAt: novaTime(-4000) }),
        mig(7, "old", "running", { createdAt: novaTime(-4000) }),
      ],
      status: seen(["fresh", "old"], {
        inFlight: [
          entry("fresh", -4000, { migrationId: "6" }),
          entry("old", -4000, { migrationId: "7" }),
        ],
      }),
      copyStartedAtMs: new Map([
        ["fresh", at(-600).getTime()],
        ["old", at(-3700).getTime()],
      ]),
      options: {
        ...OPTIONS,
        migrationTimeoutSeconds: 3600,
        abortStuckMigrations: true,
      },
    }),
    stuck: ["old"],
    abort: [["old", "7"]],
    check: (plan) => assert.equal(plan.stuck[0]?.elapsedSeconds, 3700),
  },
  {
    name:
      "Nova's per-host limit caps live starts; a cold one takes the slot a live one cannot",
    input: input({
      servers: [
        vm("a", 4),
        vm("b", 3),
        vm("c", 2, { status: "SHUTOFF" }),
        vm("r", 1, { status: "MIGRATING", taskState: "migrating" }),
      ],
      migrations: [mig(8, "r", "running")],
      status: seen(["a", "b", "c", "r"], {
        inFlight: [entry("r", -30, { migrationId: "8" })],
      }),
      novaLiveLimit: 1,
    }),
    start: ["c"],
    check: (plan) =>
      assert.deepEqual(
        plan.waiting.filter((w) => w.why === "ready").map((w) => [
          w.id,
          w.detail,
        ]),
        [
          ["a", "Nova runs 1 live migration(s) at a time from this host"],
          ["b", "Nova runs 1 live migration(s) at a time from this host"],
        ],
      ),
  },
  {
    name:
      "without a cluster budget one live migration more waits in Nova's queue",
    input: input({
      servers: [
        vm("a", 4),
        vm("b", 3),
        vm("r", 1, { status: "MIGRATING", taskState: "migrating" }),
      ],
      migrations: [mig(8, "r", "running")],
      status: seen(["a", "b", "r"], {
        inFlight: [entry("r", -30, { migrationId: "8" })],
      }),
      novaLiveLimit: 1,
      novaQueueAhead: 1,
    }),
    start: ["a"],
  },
  {
    name: "a stuck migration is only reported when aborting is off",
    input: input({
      servers: [vm("l")],
      migrations: [mig(3, "l", "running", { createdAt: novaTime(-4000) })],
      status: seen(["l"], {
        inFlight: [entry("l", -4000, { migrationId: "3" })],
      }),
      options: { ...OPTIONS, migrationTimeoutSeconds: 3600 },
    }),
    stuck: ["l"],
    abort: [],
  },
  {
    name: "progress of a live migration is copied to memoryProcessedPercent",
    input: input({
      servers: [vm("l", 1, { status: "MIGRATING", taskState: "migrating" })],
      migrations: [
        mig(3, "l", "running", {
          memoryProcessedBytes: 50,
          memoryTotalBytes: 200,
        }),
      ],
    }),
    check: (plan) =>
      assert.equal(plan.next.inFlight?.[0]?.memoryProcessedPercent, 25),
  },
  {
    name:
      "held starts (stale traits) start nothing; the drain is Waiting with the reason",
    input: input({ servers: [vm("a")], holdStarts: "TraitsUpdated is False" }),
    start: [],
    evicting: ["True", "Waiting"],
    check: (plan) =>
      assert.match(
        plan.next.conditions?.find((c) => c.type === "Evicting")?.message ?? "",
        /TraitsUpdated is False/,
      ),
  },
  {
    name:
      "MigratingInstance stays Failed while a failure remains, though others finish",
    input: input({
      servers: [vm("e", 1, { status: "ERROR", fault: { message: "x" } })],
      departed: [{ id: "m", server: vm("m", 1, { host: "node007" }) }],
      status: seen(["e", "m"], {
        failed: [failure("e", 0, -100, "ERROR: x")],
        inFlight: [entry("m", -30)],
      }),
    }),
    done: ["m"],
    migratingInstance: ["False", "Failed"],
  },
];

for (const row of rows) {
  Deno.test(`planPass: ${row.name}`, () => {
    const plan = planPass(row.input);
    if (row.start !== undefined) {
      assert.deepEqual(plan.start.map((s) => s.id), row.start);
    }
    if (row.kinds !== undefined) {
      for (const [id, kind] of Object.entries(row.kinds)) {
        assert.equal(plan.start.find((s) => s.id === id)?.kind, kind, id);
      }
    }
    if (row.inFlight !== undefined) {
      assert.deepEqual(
        (plan.next.inFlight ?? []).map((e) => e.id),
        row.inFlight,
      );
    }
    if (row.failedNow !== undefined) {
      assert.deepEqual(
        plan.failed.map((f) => [f.id, f.attempts]),
        row.failedNow,
      );
    }
    if (row.failedStatus !== undefined) {
      assert.deepEqual(
        (plan.next.failed ?? []).map((f) => f.id),
        row.failedStatus,
      );
    }
    if (row.skipped !== undefined) {
      assert.deepEqual(plan.skipped.map((s) => s.id), row.skipped);
    }
    if (row.done !== undefined) assert.deepEqual(plan.done, row.done);
    if (row.gone !== undefined) assert.deepEqual(plan.gone, row.gone);
    if (row.confirm !== undefined) {
      assert.deepEqual(plan.confirmResize, row.confirm);
    }
    if (row.abort !== undefined) {
      assert.deepEqual(plan.abort.map((a) => [a.id, a.migrationId]), row.abort);
    }
    if (row.stuck !== undefined) {
      assert.deepEqual(plan.stuck.map((s) => s.id), row.stuck);
    }
    if (row.newlyFound !== undefined) {
      assert.deepEqual(plan.newlyFound, row.newlyFound);
    }
    if (row.outstanding !== undefined) {
      assert.deepEqual(plan.next.outstandingInstances, row.outstanding);
    }
    if (row.finished !== undefined) assert.equal(plan.finished, row.finished);
    if (row.blocked !== undefined) assert.equal(plan.blocked, row.blocked);
    if (row.evicting !== undefined) {
      assert.deepEqual(condition(plan, "Evicting"), row.evicting);
    }
    if (row.migratingInstance !== undefined) {
      assert.deepEqual(
        condition(plan, "MigratingInstance"),
        row.migratingInstance,
      );
    }
    row.check?.(plan);
    // Every row also keeps the universal promises.
    assert.ok(
      plan.start.length === 0 || plan.inFlightCount <= row.input.limit,
      "never above the limit because of a start",
    );
    assert.equal(new Set(plan.start.map((s) => s.id)).size, plan.start.length);
    assert.equal(plan.next.inFlightCount, plan.next.inFlight?.length);
    assert.equal(
      plan.next.outstandingCount,
      plan.next.outstandingInstances?.length,
    );
  });
}

Deno.test("planPass: outstandingRamMb sums the flavors on the host", () => {
  const plan = planPass(
    input({ limit: 0, servers: [vm("a", 1024), vm("b", 2048)] }),
  );
  assert.equal(plan.next.outstandingRamMb, 3072);
  assert.equal(plan.next.outstandingCount, 2);
});

Deno.test("planPass: fields it does not own are kept; limit and source recorded", () => {
  const plan = planPass(input({
    limit: 2,
    limitSource: "eviction",
    generation: 7,
    status: {
      hypervisorServiceId: "42",
      conditions: [{
        type: "HypervisorDisabled",
        status: "True",
        reason: "Disabled",
        message: "by evictor",
        lastTransitionTime: at(-100).toISOString(),
      }],
    },
  }));
  assert.equal(plan.next.hypervisorServiceId, "42");
  assert.equal(plan.next.effectiveLimit, 2);
  assert.equal(plan.next.limitSource, "eviction");
  assert.equal(plan.next.observedGeneration, 7);
  assert.deepEqual(plan.next.conditions?.map((c) => c.type), [
    "HypervisorDisabled",
    "Evicting",
    "MigratingInstance",
  ]);
  assert.equal(
    plan.next.conditions?.[0]?.lastTransitionTime,
    at(-100).toISOString(),
  );
});

Deno.test("planPass: startedAt is kept, finishedAt set once; a VM that appears reopens the drain", () => {
  const first = planPass(input({ servers: [], status: seen([]) }));
  assert.equal(first.next.startedAt, at(-3600).toISOString());
  assert.equal(first.next.finishedAt, T0.toISOString());
  const later = planPass(input({ now: at(60), status: first.next }));
  assert.equal(later.next.finishedAt, T0.toISOString());
  const back = planPass(
    input({ now: at(120), status: later.next, servers: [vm("n")] }),
  );
  assert.equal(back.next.finishedAt, undefined);
  assert.deepEqual(back.newlyFound, ["n"]);
  assert.deepEqual(condition(back, "Evicting"), ["True", "Running"]);
  // Arriving (not listed yet) reopens it too, and nothing is started for it.
  const arriving = planPass(input({
    now: at(120),
    status: later.next,
    migrations: [
      mig(9, "m", "running", { sourceCompute: "node007", destCompute: HOST }),
    ],
  }));
  assert.equal(arriving.next.finishedAt, undefined);
  assert.deepEqual(arriving.next.outstandingInstances, ["m"]);
  assert.deepEqual(arriving.arriving, ["m"]);
  assert.deepEqual(arriving.start, []);
  assert.deepEqual(arriving.failed, []);
});

Deno.test("planPass: Evicting's lastTransitionTime moves only when its status does", () => {
  const p1 = planPass(input({ servers: [vm("a"), vm("b")], limit: 1 }));
  const running = p1.next.conditions?.find((c) => c.type === "Evicting");
  assert.equal(running?.lastTransitionTime, T0.toISOString());
  const p2 = planPass(input({
    now: at(10),
    limit: 1,
    servers: [vm("a", 1024, { status: "MIGRATING" }), vm("b")],
    status: p1.next,
  }));
  assert.equal(
    p2.next.conditions?.find((c) => c.type === "Evicting")?.lastTransitionTime,
    T0.toISOString(),
  );
  const p3 = planPass(input({
    now: at(20),
    status: p2.next,
    departed: [
      { id: "a", server: vm("a", 1024, { host: "x" }) },
      { id: "b", server: vm("b", 1024, { host: "x" }) },
    ],
  }));
  const done = p3.next.conditions?.find((c) => c.type === "Evicting");
  assert.deepEqual([done?.status, done?.reason], ["False", "Succeeded"]);
  assert.equal(done?.lastTransitionTime, at(20).toISOString());
});

Deno.test("planPass: bad inputs throw RangeErrors naming the value", () => {
  assert.throws(
    () => planPass(input({ limit: -1 })),
    /limit must be an integer >= 0, got -1/,
  );
  assert.throws(() => planPass(input({ limit: 1.5 })), RangeError);
  assert.throws(
    () => planPass(input({ clusterBudgetLeft: NaN })),
    /clusterBudgetLeft.*NaN/,
  );
  assert.throws(
    () => planPass(input({ now: new Date("nope") })),
    /now must be a valid Date/,
  );
  assert.throws(
    () => planPass(input({ host: "" })),
    /host must be a non-empty string/,
  );
  assert.throws(
    () => planPass(input({ options: { ...OPTIONS, maxAttempts: 0 } })),
    /options.maxAttempts must be an integer >= 1, got 0/,
  );
  assert.throws(
    () => planPass(input({ options: { ...OPTIONS, gracePeriodMs: -5 } })),
    /options.gracePeriodMs must be a finite number >= 0, got -5/,
  );
});

Deno.test("departedIds: tracked ids (outstanding or in flight) no longer listed, sorted", () => {
  const ids = departedIds(
    {
      outstandingInstances: ["b", "a", "c"],
      inFlight: [entry("z", 0), entry("a", 0)],
    },
    [vm("c")],
    [],
    HOST,
  );
  assert.deepEqual(ids, ["a", "b", "z"]);
  assert.deepEqual(departedIds(undefined, [vm("a")], [], HOST), []);
  // Unfinished records of VMs no longer listed are looked up too; records
  // of VMs still listed, finished ones and other sources are not.
  assert.deepEqual(
    departedIds(undefined, [vm("a")], [
      mig(1, "a", "running"),
      mig(2, "b", "finished", { migrationType: "migration" }),
      mig(3, "c", "queued"),
      mig(4, "d", "completed"),
      mig(5, "e", "confirmed"),
      mig(6, "f", "running", { sourceCompute: "node007" }),
    ], HOST),
    ["b", "c"],
  );
});

Deno.test("splitStarts: at most slots in all and liveSlots live, in the given order", () => {
  const r = (id: string, kind: "live" | "cold") => ({ id, kind });
  const ready = [
    r("a", "live"),
    r("b", "live"),
    r("c", "cold"),
    r("d", "live"),
  ];
  const cases: Array<[string, number, number, string, string]> = [
    ["no cap", 3, Infinity, "a,b,c", "d"],
    ["live cap 1", 3, 1, "a,c", "b,d"],
    ["live cap 0", 3, 0, "c", "a,b,d"],
    ["negative live cap (more in flight than Nova runs)", 3, -2, "c", "a,b,d"],
    ["no slot", 0, 5, "", "a,b,c,d"],
  ];
  for (const [what, slots, live, start, left] of cases) {
    const p = splitStarts(ready, slots, live);
    assert.equal(p.start.map((x) => x.id).join(), start, what);
    assert.equal(p.left.map((x) => x.id).join(), left, what);
  }
});
