import assert from "node:assert/strict";
import fc from "fast-check";
import type {
  EvictionStatus,
  EvictionStatusConditionsItem,
  Hypervisor,
} from "../../models/mod.ts";
import {
  type ComputeService,
  ConflictError,
  ForbiddenError,
  OpenStackError,
  UnavailableError,
} from "../../openstack/mod.ts";
import { at, HOST, T0 } from "../../tests/harness/plan_fixtures.ts";
import { callOutcome } from "../../openstack/nova.ts";
import {
  nothingDrainedMessage,
  preflight,
  type PreflightInput,
  type PreflightOutcome,
} from "./preflight.ts";

const SERVICE_ID = "c7a1e0de-0000-4000-8000-000000000042";
const GENERATION = 3;

/** The two Nova calls preflight makes, recorded, each answering or failing as told. */
class FakeNova {
  service: ComputeService | undefined;
  findError: Error | undefined;
  setError: Error | undefined;
  readonly finds: { host: string; signal: AbortSignal | undefined }[] = [];
  /** Each call as `name outcome` (the client's outcome names). */
  readonly made: string[] = [];
  readonly sets: {
    id: string;
    enabled: boolean;
    reason: string | undefined;
    signal: AbortSignal | undefined;
  }[] = [];

  constructor(
    service: ComputeService | undefined,
    errors: { find?: Error; set?: Error } = {},
  ) {
    this.service = service;
    this.findError = errors.find;
    this.setError = errors.set;
  }

  findComputeService(
    host: string,
    signal?: AbortSignal,
  ): Promise<ComputeService | undefined> {
    this.finds.push({ host, signal });
    this.made.push(`findComputeService ${callOutcome(this.findError)}`);
    if (this.findError !== undefined) return Promise.reject(this.findError);
    return Promise.resolve(
      this.service?.host === host ? { ...this.service } : undefined,
    );
  }

  setComputeServiceStatus(
    id: string,
    enabled: boolean,
    reason?: string,
    signal?: AbortSignal,
  ): Promise<ComputeService> {
    this.sets.push({ id, enabled, reason, signal });
    this.made.push(`setComputeServiceStatus ${callOutcome(this.setError)}`);
    if (this.setError !== undefined) return Promise.reject(this.setError);
    if (this.service === undefined || this.service.id !== id) {
      return Promise.reject(new RangeError(`no service ${id}`));
    }
    this.service = {
      ...this.service,
      status: enabled ? "enabled" : "disabled",
      disabledReason: enabled ? null : reason ?? null,
    };
    return Promise.resolve({ ...this.service });
  }
}

function service(
  status: "enabled" | "disabled",
  disabledReason: string | null = null,
): ComputeService {
  return {
    id: SERVICE_ID,
    binary: "nova-compute",
    host: HOST,
    status,
    state: "up",
    disabledReason,
    forcedDown: false,
  };
}

function hypervisor(ids: { hypervisorId?: string; serviceId?: string }) {
  return { metadata: { name: HOST }, status: ids } satisfies Hypervisor;
}

function input(over: Partial<PreflightInput> = {}): PreflightInput {
  return {
    host: HOST,
    reason: "kernel 6.12",
    hypervisor: hypervisor({ hypervisorId: "17", serviceId: SERVICE_ID }),
    status: {},
    now: T0,
    generation: GENERATION,
    ...over,
  };
}

async function run(
  fake: FakeNova,
  inp: PreflightInput,
  signal?: AbortSignal,
): Promise<{ out: PreflightOutcome; fake: FakeNova }> {
  const out = await preflight(fake, inp, signal);
  return { out, fake };
}

function cond(
  status: EvictionStatus,
  type: string,
): EvictionStatusConditionsItem | undefined {
  return status.conditions?.find((c) => c.type === type);
}

/** The Nova calls made, as `call outcome` strings with their counts. */
function novaCalls(fake: FakeNova): Record<string, number> {
  const out: Record<string, number> = {};
  for (const c of fake.made) out[c] = (out[c] ?? 0) + 1;
  return out;
}

Deno.test("preflight: what becomes of the host's compute service, and the condition it sets", async () => {
  const rows: {
    name: string;
    service: ComputeService;
    reason?: string;
    want: {
      set: { id: string; enabled: boolean; reason: string }[];
      disabledNow: boolean;
      reason: string;
      message: string;
      serviceAfter: { status: string; disabledReason: string | null };
    };
  }[] = [
    {
      name: "enabled: disabled now, with our marked reason",
      service: service("enabled"),
      want: {
        set: [{
          id: SERVICE_ID,
          enabled: false,
          reason: "evictor: kernel 6.12",
        }],
        disabledNow: true,
        reason: "Disabled",
        message: `compute service ${SERVICE_ID} disabled: evictor: kernel 6.12`,
        serviceAfter: {
          status: "disabled",
          disabledReason: "evictor: kernel 6.12",
        },
      },
    },
    {
      name: "enabled, a multi-line spec reason: written on one line",
      service: service("enabled"),
      reason: "  kernel\n  6.12\tupgrade ",
      want: {
        set: [{
          id: SERVICE_ID,
          enabled: false,
          reason: "evictor: kernel 6.12 upgrade",
        }],
        disabledNow: true,
        reason: "Disabled",
        message:
          `compute service ${SERVICE_ID} disabled: evictor: kernel 6.12 upgrade`,
        serviceAfter: {
          status: "disabled",
          disabledReason: "evictor: kernel 6.12 upgrade",
        },
      },
    },
    {
      name:
        "disabled by evictor already (an earlier pass): kept, not disabled again",
      service: service("disabled", "evictor: earlier drain"),
      want: {
        set: [],
        disabledNow: false,
        reason: "Disabled",
        message:
          `compute service ${SERVICE_ID} disabled by evictor: evictor: earlier drain`,
        serviceAfter: {
          status: "disabled",
          disabledReason: "evictor: earlier drain",
        },
      },
    },
    {
      name: "disabled by someone else: kept as it is, never to be re-enabled",
      service: service("disabled", "hardware swap"),
      want: {
        set: [],
        disabledNow: false,
        reason: "AlreadyDisabled",
        message:
          `compute service ${SERVICE_ID} was already disabled by someone else ("hardware swap"); it will not be re-enabled`,
        serviceAfter: { status: "disabled", disabledReason: "hardware swap" },
      },
    },
    {
      name: "disabled without a reason: someone else's",
      service: service("disabled", null),
      want: {
        set: [],
        disabledNow: false,
        reason: "AlreadyDisabled",
        message:
          `compute service ${SERVICE_ID} was already disabled by someone else (""); it will not be re-enabled`,
        serviceAfter: { status: "disabled", disabledReason: null },
      },
    },
    {
      name: "disabled with a reason that only mentions evictor: someone else's",
      service: service("disabled", "not evictor: manual"),
      want: {
        set: [],
        disabledNow: false,
        reason: "AlreadyDisabled",
        message:
          `compute service ${SERVICE_ID} was already disabled by someone else ("not evictor: manual"); it will not be re-enabled`,
        serviceAfter: {
          status: "disabled",
          disabledReason: "not evictor: manual",
        },
      },
    },
  ];
  for (const row of rows) {
    const fake = new FakeNova(row.service);
    const ac = new AbortController();
    const { out } = await run(
      fake,
      input(row.reason === undefined ? {} : { reason: row.reason }),
      ac.signal,
    );
    assert.equal(out.kind, "ready", row.name);
    if (out.kind !== "ready") continue;
    assert.deepEqual(
      fake.sets.map(({ id, enabled, reason }) => ({ id, enabled, reason })),
      row.want.set,
      `${row.name}: set calls`,
    );
    assert.equal(
      out.disabledNow,
      row.want.disabledNow,
      `${row.name}: disabledNow`,
    );
    assert.deepEqual(
      fake.finds.map((f) => f.host),
      [HOST],
      `${row.name}: looked up by host`,
    );
    for (const call of [...fake.finds, ...fake.sets]) {
      assert.equal(call.signal, ac.signal, `${row.name}: signal passed on`);
    }
    assert.deepEqual(
      {
        status: fake.service?.status,
        disabledReason: fake.service?.disabledReason,
      },
      row.want.serviceAfter,
      `${row.name}: the service afterwards`,
    );
    assert.equal(out.status.hypervisorServiceId, SERVICE_ID, row.name);
    assert.equal(
      out.status.startedAt,
      T0.toISOString(),
      `${row.name}: startedAt`,
    );
    assert.deepEqual(
      cond(out.status, "HypervisorDisabled"),
      {
        type: "HypervisorDisabled",
        status: "True",
        observedGeneration: GENERATION,
        lastTransitionTime: T0.toISOString(),
        reason: row.want.reason,
        message: row.want.message,
      },
      `${row.name}: HypervisorDisabled`,
    );
    assert.deepEqual(
      cond(out.status, "PreflightChecksSucceeded"),
      {
        type: "PreflightChecksSucceeded",
        status: "True",
        observedGeneration: GENERATION,
        lastTransitionTime: T0.toISOString(),
        reason: "Succeeded",
        message: `compute service ${SERVICE_ID} of host ${HOST} is disabled`,
      },
      `${row.name}: PreflightChecksSucceeded`,
    );
    assert.equal(
      cond(out.status, "Evicting"),
      undefined,
      `${row.name}: Evicting left to the planner`,
    );
    assert.deepEqual(
      novaCalls(fake),
      row.want.set.length === 0
        ? { "findComputeService ok": 1 }
        : { "findComputeService ok": 1, "setComputeServiceStatus ok": 1 },
      `${row.name}: counted calls`,
    );
  }
});

Deno.test("preflight: what a ready preflight keeps of the status so far", async () => {
  const earlier = at(-3600).toISOString();
  const rows: {
    name: string;
    status: EvictionStatus;
    generation: number | undefined;
    want: {
      startedAt: string;
      preflightSince: string;
      disabledSince: string;
      observedGeneration: number | undefined;
      others: EvictionStatusConditionsItem[];
      migratedCount: number | undefined;
    };
  }[] = [
    {
      name: "a fresh status: started now, both conditions new",
      status: {},
      generation: GENERATION,
      want: {
        startedAt: T0.toISOString(),
        preflightSince: T0.toISOString(),
        disabledSince: T0.toISOString(),
        observedGeneration: GENERATION,
        others: [],
        migratedCount: undefined,
      },
    },
    {
      name: "a drain started earlier keeps its start and counts",
      status: { startedAt: earlier, migratedCount: 4 },
      generation: GENERATION,
      want: {
        startedAt: earlier,
        preflightSince: T0.toISOString(),
        disabledSince: T0.toISOString(),
        observedGeneration: GENERATION,
        others: [],
        migratedCount: 4,
      },
    },
    {
      name:
        "a failed preflight before (Preflight False): it turns True now; Evicting is left alone",
      status: {
        conditions: [
          {
            type: "PreflightChecksSucceeded",
            status: "False",
            lastTransitionTime: earlier,
            reason: "HypervisorNotFound",
            message: "gone",
          },
          {
            type: "Evicting",
            status: "False",
            lastTransitionTime: earlier,
            reason: "Failed",
            message: "gone",
          },
        ],
      },
      generation: GENERATION,
      want: {
        startedAt: T0.toISOString(),
        preflightSince: T0.toISOString(),
        disabledSince: T0.toISOString(),
        observedGeneration: GENERATION,
        others: [{
          type: "Evicting",
          status: "False",
          lastTransitionTime: earlier,
          reason: "Failed",
          message: "gone",
        }],
        migratedCount: undefined,
      },
    },
    {
      name:
        "conditions True already keep their transition time and generation when none is given",
      status: {
        conditions: [
          {
            type: "HypervisorDisabled",
            status: "True",
            observedGeneration: 1,
            lastTransitionTime: earlier,
            reason: "Disabled",
            message: "old",
          },
          {
            type: "PreflightChecksSucceeded",
            status: "True",
            observedGeneration: 1,
            lastTransitionTime: earlier,
            reason: "Succeeded",
            message: "old",
          },
        ],
      },
      generation: undefined,
      want: {
        startedAt: T0.toISOString(),
        preflightSince: earlier,
        disabledSince: earlier,
        observedGeneration: 1,
        others: [],
        migratedCount: undefined,
      },
    },
  ];
  for (const row of rows) {
    const { out } = await run(
      new FakeNova(service("enabled")),
      input({ status: row.status, generation: row.generation }),
    );
    assert.equal(out.kind, "ready", row.name);
    if (out.kind !== "ready") continue;
    assert.equal(
      out.status.startedAt,
      row.want.startedAt,
      `${row.name}: startedAt`,
    );
    assert.equal(out.status.migratedCount, row.want.migratedCount, row.name);
    const p = cond(out.status, "PreflightChecksSucceeded");
    const d = cond(out.status, "HypervisorDisabled");
    assert.equal(p?.status, "True", `${row.name}: Preflight`);
    assert.equal(p?.lastTransitionTime, row.want.preflightSince, row.name);
    assert.equal(d?.lastTransitionTime, row.want.disabledSince, row.name);
    assert.equal(p?.observedGeneration, row.want.observedGeneration, row.name);
    assert.equal(d?.observedGeneration, row.want.observedGeneration, row.name);
    assert.equal(
      d?.message,
      `compute service ${SERVICE_ID} disabled: evictor: kernel 6.12`,
      `${row.name}: message replaced`,
    );
    assert.deepEqual(
      (out.status.conditions ?? []).filter((c) =>
        c.type !== "PreflightChecksSucceeded" && c.type !== "HypervisorDisabled"
      ),
      row.want.others,
      `${row.name}: other conditions`,
    );
  }
});

Deno.test("preflight: a host Nova has no compute service for", async () => {
  const earlier = at(-600).toISOString();
  const rows: {
    name: string;
    hypervisor: Hypervisor | undefined;
    status?: EvictionStatus;
    want:
      | {
        kind: "unregistered";
        preflightMessage: string;
        startedAt: string;
        finishedAt: string;
        migratedCount: number;
      }
      | { kind: "failed"; message: string };
  }[] = [
    {
      name: "no Hypervisor either: nothing drained, the name to check",
      hypervisor: undefined,
      want: {
        kind: "unregistered",
        preflightMessage:
          `Nova has no compute service named ${HOST} and no Hypervisor has that name: check it`,
        startedAt: T0.toISOString(),
        finishedAt: T0.toISOString(),
        migratedCount: 0,
      },
    },
    {
      name: "a Hypervisor without Nova ids: never registered, nothing drained",
      hypervisor: hypervisor({}),
      want: {
        kind: "unregistered",
        preflightMessage:
          `Nova has no compute service named ${HOST}; Hypervisor ${HOST} records no Nova ids (never registered)`,
        startedAt: T0.toISOString(),
        finishedAt: T0.toISOString(),
        migratedCount: 0,
      },
    },
    {
      name: "a Hypervisor with empty Nova ids: never registered",
      hypervisor: hypervisor({ hypervisorId: "", serviceId: "" }),
      want: {
        kind: "unregistered",
        preflightMessage:
          `Nova has no compute service named ${HOST}; Hypervisor ${HOST} records no Nova ids (never registered)`,
        startedAt: T0.toISOString(),
        finishedAt: T0.toISOString(),
        migratedCount: 0,
      },
    },
    {
      name: "an earlier start, finish and count are kept",
      hypervisor: hypervisor({}),
      status: { startedAt: earlier, finishedAt: earlier, migratedCount: 2 },
      want: {
        kind: "unregistered",
        preflightMessage:
          `Nova has no compute service named ${HOST}; Hypervisor ${HOST} records no Nova ids (never registered)`,
        startedAt: earlier,
        finishedAt: earlier,
        migratedCount: 2,
      },
    },
    {
      name:
        "registered once (both ids): Nova lost it, a failure naming the ids",
      hypervisor: hypervisor({ hypervisorId: "17", serviceId: SERVICE_ID }),
      want: {
        kind: "failed",
        message:
          `Nova has no nova-compute service on host ${HOST}, but Hypervisor ${HOST} records Nova ids (hypervisorId "17", serviceId "${SERVICE_ID}")`,
      },
    },
    {
      name: "registered once (hypervisor id only): a failure",
      hypervisor: hypervisor({ hypervisorId: "17" }),
      want: {
        kind: "failed",
        message:
          `Nova has no nova-compute service on host ${HOST}, but Hypervisor ${HOST} records Nova ids (hypervisorId "17", serviceId "")`,
      },
    },
    {
      name: "registered once (service id only): a failure",
      hypervisor: hypervisor({ serviceId: SERVICE_ID }),
      want: {
        kind: "failed",
        message:
          `Nova has no nova-compute service on host ${HOST}, but Hypervisor ${HOST} records Nova ids (hypervisorId "", serviceId "${SERVICE_ID}")`,
      },
    },
  ];
  for (const row of rows) {
    const fake = new FakeNova(undefined);
    const { out } = await run(
      fake,
      input({ hypervisor: row.hypervisor, status: row.status ?? {} }),
    );
    assert.equal(out.kind, row.want.kind, `${row.name}: kind`);
    assert.deepEqual(fake.sets, [], `${row.name}: no service touched`);
    assert.equal(
      out.status.hypervisorServiceId,
      undefined,
      `${row.name}: no service recorded`,
    );
    assert.equal(
      cond(out.status, "HypervisorDisabled"),
      undefined,
      `${row.name}: HypervisorDisabled not set`,
    );
    const p = cond(out.status, "PreflightChecksSucceeded");
    const e = cond(out.status, "Evicting");
    if (row.want.kind === "unregistered") {
      assert.deepEqual(
        {
          p: [p?.status, p?.reason, p?.message],
          e: [e?.status, e?.reason, e?.message],
        },
        {
          p: ["True", "NotRegistered", row.want.preflightMessage],
          e: ["False", "NotInNova", nothingDrainedMessage(HOST)],
        },
        `${row.name}: conditions`,
      );
      assert.deepEqual(
        {
          outstandingInstances: out.status.outstandingInstances,
          outstandingCount: out.status.outstandingCount,
          outstandingRamMb: out.status.outstandingRamMb,
          inFlightCount: out.status.inFlightCount,
          migratedCount: out.status.migratedCount,
          startedAt: out.status.startedAt,
          finishedAt: out.status.finishedAt,
        },
        {
          outstandingInstances: [],
          outstandingCount: 0,
          outstandingRamMb: 0,
          inFlightCount: 0,
          migratedCount: row.want.migratedCount,
          startedAt: row.want.startedAt,
          finishedAt: row.want.finishedAt,
        },
        `${row.name}: an ended, empty drain`,
      );
    } else {
      assert.equal(out.kind, "failed");
      if (out.kind !== "failed") continue;
      assert.equal(out.message, row.want.message, `${row.name}: message`);
      assert.deepEqual(
        {
          p: [p?.status, p?.reason, p?.message],
          e: [e?.status, e?.reason, e?.message],
        },
        {
          p: ["False", "HypervisorNotFound", row.want.message],
          e: ["False", "Failed", row.want.message],
        },
        `${row.name}: conditions`,
      );
      assert.equal(out.status.finishedAt, undefined, `${row.name}: not ended`);
      assert.equal(out.status.startedAt, undefined, `${row.name}: not started`);
    }
  }
});

Deno.test("preflight: a Nova error rejects it as the failed call's error, counted under that call", async () => {
  const rows: {
    name: string;
    service: ComputeService;
    errors: { find?: Error; set?: Error };
    wantMessage: RegExp;
    wantCalls: Record<string, number>;
    wantSets: number;
  }[] = [
    {
      name: "the service lookup answers 503",
      service: service("enabled"),
      errors: {
        find: new UnavailableError(
          "HTTP 503 GET /os-services: Service Unavailable",
          { status: 503, method: "GET", url: "https://nova/v2.1/os-services" },
        ),
      },
      wantMessage: /GET \/os-services/,
      wantCalls: { "findComputeService 503": 1 },
      wantSets: 0,
    },
    {
      name: "the service lookup gets no answer",
      service: service("enabled"),
      errors: {
        find: new OpenStackError(
          "GET /os-services: connection reset",
          { method: "GET", url: "https://nova/v2.1/os-services" },
        ),
      },
      wantMessage: /os-services: connection reset/,
      wantCalls: { "findComputeService no_response": 1 },
      wantSets: 0,
    },
    {
      name: "disabling the service is forbidden",
      service: service("enabled"),
      errors: {
        set: new ForbiddenError(
          "Policy doesn't allow os_compute_api:os-services:update to be performed.",
          {
            status: 403,
            method: "PUT",
            url: `https://nova/v2.1/os-services/${SERVICE_ID}`,
          },
        ),
      },
      wantMessage: /os_compute_api:os-services:update/,
      wantCalls: {
        "findComputeService ok": 1,
        "setComputeServiceStatus 403": 1,
      },
      wantSets: 1,
    },
    {
      name: "disabling the service conflicts",
      service: service("enabled"),
      errors: {
        set: new ConflictError(
          `Service ${SERVICE_ID} is being updated`,
          { status: 409, method: "PUT" },
        ),
      },
      wantMessage: new RegExp(`Service ${SERVICE_ID}`),
      wantCalls: {
        "findComputeService ok": 1,
        "setComputeServiceStatus conflict": 1,
      },
      wantSets: 1,
    },
  ];
  for (const row of rows) {
    const fake = new FakeNova(row.service, row.errors);
    const thrown = row.errors.find ?? row.errors.set;
    await assert.rejects(
      preflight(fake, input()),
      (err: unknown) => {
        assert.equal(err, thrown, `${row.name}: the very error`);
        assert.match((err as Error).message, row.wantMessage, row.name);
        return true;
      },
      row.name,
    );
    assert.equal(fake.sets.length, row.wantSets, `${row.name}: set calls`);
    assert.deepEqual(
      novaCalls(fake),
      row.wantCalls,
      `${row.name}: counted calls`,
    );
  }
});

Deno.test("preflight: nothingDrainedMessage names the host", () => {
  const rows: { name: string; host: string; want: string }[] = [
    {
      name: "a plain host",
      host: "node042",
      want: "nothing drained: Nova has no compute service named node042",
    },
    {
      name: "a typo of a host",
      host: "nod042",
      want: "nothing drained: Nova has no compute service named nod042",
    },
    {
      name: "a dotted host name",
      host: "node042.rack7.example",
      want:
        "nothing drained: Nova has no compute service named node042.rack7.example",
    },
  ];
  for (const row of rows) {
    assert.equal(nothingDrainedMessage(row.host), row.want, row.name);
  }
});

// Property: whatever state and reason the service is found with, the
// preflight never enables it, disables it only when it was enabled (with a
// marked reason Nova accepts), records its id, and calls it someone else's
// exactly when its disabled reason is not evictor's.
Deno.test("preflight: a found service is only ever disabled, and someone else's is left alone (property)", async () => {
  const reasonArb = fc.oneof(
    fc.constant(null),
    fc.string({ maxLength: 20 }),
    fc.string({ maxLength: 20 }).map((s) => `evictor: ${s}`),
  );
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom("enabled" as const, "disabled" as const),
      reasonArb,
      fc.string({ maxLength: 400 }),
      async (state, disabledReason, specReason) => {
        const fake = new FakeNova(service(state, disabledReason));
        const { out } = await run(fake, input({ reason: specReason }));
        assert.equal(out.kind, "ready");
        if (out.kind !== "ready") return;
        assert.equal(out.status.hypervisorServiceId, SERVICE_ID);
        assert.equal(out.disabledNow, state === "enabled");
        assert.equal(fake.sets.length, state === "enabled" ? 1 : 0);
        for (const s of fake.sets) {
          assert.equal(s.enabled, false, "never enabled");
          assert.ok(s.reason?.startsWith("evictor: "), "marked as ours");
          assert.ok((s.reason?.length ?? 0) <= 255, "fits Nova's limit");
          assert.ok(!/[\n\r\t]/.test(s.reason ?? ""), "one line");
        }
        const d = cond(out.status, "HypervisorDisabled");
        const someoneElses = state === "disabled" &&
          !(disabledReason ?? "").startsWith("evictor: ");
        assert.equal(d?.status, "True");
        assert.equal(
          d?.reason,
          someoneElses ? "AlreadyDisabled" : "Disabled",
        );
        assert.equal(fake.service?.status, "disabled");
        if (state === "disabled") {
          assert.equal(fake.service?.disabledReason, disabledReason);
        }
      },
    ),
    { numRuns: 200 },
  );
});
