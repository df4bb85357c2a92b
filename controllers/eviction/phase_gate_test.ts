import assert from "node:assert/strict";
import type { NextLook } from "./pass.ts";
import type {
  Eviction,
  EvictionStatus,
  EvictionStatusConditionsItem,
  Hypervisor,
} from "../../models/mod.ts";
import type { ComputeService } from "../../openstack/mod.ts";
import { ourDisabledReason } from "../compute_service.ts";
import {
  CONDITION_EVICTING,
  CONDITION_HYPERVISOR_DISABLED,
  CONDITION_PREFLIGHT,
  CONDITION_WAVE_SETTLED,
} from "../conditions.ts";
import {
  eviction,
  type PassFixture,
  passFixture,
  type PassWorld,
} from "../../tests/harness/pass_fixture.ts";
import { UNSUPPORTED_PREFIX } from "./classify.ts";
import type { NovaClient } from "../../openstack/mod.ts";
import { type MutablePass, runSteps, type Step } from "./pass.ts";
import { GATE } from "./phase_gate.ts";
import { preflight } from "./preflight.ts";
import { RETRY_ANNOTATION } from "./retry.ts";

// The fixture's defaults: pollIntervalMs 1 s, slowPollMs 10 s,
// finishedCheckMs 60 s, waveSettleMs 15 s; its clock starts at NOW.
const NOW = Date.parse("2026-01-01T01:00:00Z");
const POLL = 1_000;
const SLOW = 10_000;
const FINISHED_CHECK = 60_000;
const iso = (ms: number) => new Date(ms).toISOString();

/** A pass's setting: its Eviction, the world, and its drain's memory. */
interface Scenario {
  name: string;
  ev: Eviction;
  world?: PassWorld;
  /** Sets the drain's memory (or the informer) before the gate runs. */
  setup?: (fx: PassFixture) => void;
}

/** A condition as the status holds it. */
function cond(
  type: string,
  status: "True" | "False",
  reason: string,
  message = "",
  at = "2026-01-01T00:00:00.000Z",
): EvictionStatusConditionsItem {
  return {
    type,
    status,
    reason,
    message,
    lastTransitionTime: at,
    observedGeneration: 1,
  };
}

/** `[status, reason]` of a condition, or undefined when absent. */
function condOf(
  status: EvictionStatus | undefined,
  type: string,
): [string, string] | undefined {
  const c = status?.conditions?.find((x) => x.type === type);
  return c === undefined ? undefined : [c.status, c.reason];
}

/** A started drain whose compute service is disabled and recorded. */
const RUNNING: EvictionStatus = {
  hypervisorServiceId: "svc-h1",
  startedAt: "2026-01-01T00:10:00Z",
};

/** An Eviction with an annotation. */
function annotated(ev: Eviction, key: string, value: string): Eviction {
  return {
    ...ev,
    metadata: { ...ev.metadata, annotations: { [key]: value } },
  };
}

/** An Eviction being deleted. */
function deleting(ev: Eviction): Eviction {
  return {
    ...ev,
    metadata: { ...ev.metadata, deletionTimestamp: "2026-01-01T00:50:00Z" },
  };
}

function service(
  status: ComputeService["status"],
  disabledReason: string | null = null,
): ComputeService {
  return {
    id: "svc-h1",
    binary: "nova-compute",
    host: "h1",
    status,
    state: "up",
    disabledReason,
    forcedDown: false,
  } as ComputeService;
}

/** A Nova whose compute service of h1 is `svc` (undefined: none); calls logged. */
function novaWith(
  svc: ComputeService | undefined,
  calls: string[],
): Pick<NovaClient, "findComputeService" | "setComputeServiceStatus"> {
  return {
    findComputeService: (host: string) => {
      calls.push(`findComputeService ${host}`);
      return Promise.resolve(svc);
    },
    setComputeServiceStatus: (
      id: string,
      enabled: boolean,
      reason?: string,
    ) => {
      calls.push(`setComputeServiceStatus ${id} ${enabled} ${reason}`);
      return Promise.resolve({ ...service("disabled", reason ?? null), id });
    },
  };
}

/** A Hypervisor with the given status (Nova ids, numInstances). */
function hypervisor(
  name: string,
  status: Hypervisor["status"] = {},
): Hypervisor {
  return {
    apiVersion: "kvm.cloud.sap/v1",
    kind: "Hypervisor",
    metadata: { name },
    status,
  } as Hypervisor;
}

/** The Events as `type reason`. */
const eventsOf = (fx: PassFixture) =>
  fx.events.map((e) => `${e.type} ${e.reason}`);

/** The gate's steps applied to a copy of the pass, as one Step. */
async function gate(pass: MutablePass): Promise<Step> {
  const p = { ...pass };
  const end = await runSteps(p, GATE);
  const after = p.afterRecord;
  return {
    status: p.status,
    end,
    ...(p.waveHold === undefined ? {} : { hold: p.waveHold }),
    ...(p.retryValue === undefined ? {} : { retry: p.retryValue }),
    ...(after.length === 0 ? {} : { after: () => after.forEach((f) => f()) }),
  };
}

async function run(
  s: Scenario,
): Promise<{ fx: PassFixture; step: Step }> {
  const fx = passFixture(s.ev, s.world);
  s.setup?.(fx);
  return { fx, step: await gate(fx.pass) };
}

// ---------------------------------------------------------------- duplicate

const DUPLICATE_MESSAGE =
  "Eviction a already drains hypervisor h1; this one waits until it is finished or deleted";

const DUPLICATE: Array<
  Scenario & {
    want: {
      evicting: [string, string] | undefined;
      end: NextLook | undefined;
      events: string[];
    };
  }
> = [
  {
    name: "an older Eviction of the host stands: Duplicate, a Warning",
    ev: eviction("b", "h1", RUNNING, "2026-01-01T00:00:10Z"),
    world: { evictions: [eviction("a", "h1", RUNNING)] },
    want: {
      evicting: ["False", "Duplicate"],
      end: { inMs: SLOW },
      events: ["Warning DuplicateEviction"],
    },
  },
  {
    name: "Duplicate already recorded: the same end, no second Warning",
    ev: eviction("b", "h1", {
      ...RUNNING,
      conditions: [
        cond(CONDITION_EVICTING, "False", "Duplicate", DUPLICATE_MESSAGE),
      ],
    }, "2026-01-01T00:00:10Z"),
    world: { evictions: [eviction("a", "h1", RUNNING)] },
    want: {
      evicting: ["False", "Duplicate"],
      end: { inMs: SLOW },
      events: [],
    },
  },
  {
    name: "created at the same time: the name decides which is older",
    ev: eviction("b", "h1", RUNNING),
    world: { evictions: [eviction("a", "h1", RUNNING)] },
    want: {
      evicting: ["False", "Duplicate"],
      end: { inMs: SLOW },
      events: ["Warning DuplicateEviction"],
    },
  },
  {
    name: "the older one is another partition's (allEvictions)",
    ev: eviction("b", "h1", RUNNING, "2026-01-01T00:00:10Z"),
    world: {
      deps: {
        allEvictions: {
          list: () => [
            eviction("a", "h1", RUNNING),
            eviction("b", "h1", RUNNING, "2026-01-01T00:00:10Z"),
          ],
        },
      },
    },
    want: {
      evicting: ["False", "Duplicate"],
      end: { inMs: SLOW },
      events: ["Warning DuplicateEviction"],
    },
  },
  {
    name: "a newer Eviction of the host does not hold the older",
    ev: eviction("a", "h1", RUNNING),
    world: {
      evictions: [eviction("b", "h1", RUNNING, "2026-01-01T00:00:10Z")],
    },
    want: {
      evicting: undefined,
      end: undefined,
      events: ["Normal WaveSettled"],
    },
  },
  {
    name: "the older one finished: this one drains",
    ev: eviction("b", "h1", RUNNING, "2026-01-01T00:00:10Z"),
    world: {
      evictions: [
        eviction("a", "h1", { ...RUNNING, finishedAt: "2026-01-01T00:20:00Z" }),
      ],
    },
    want: {
      evicting: undefined,
      end: undefined,
      events: ["Normal WaveSettled"],
    },
  },
  {
    name: "the older one is being deleted: this one drains",
    ev: eviction("b", "h1", RUNNING, "2026-01-01T00:00:10Z"),
    world: { evictions: [deleting(eviction("a", "h1", RUNNING))] },
    want: {
      evicting: undefined,
      end: undefined,
      events: ["Normal WaveSettled"],
    },
  },
  {
    name: "an older Eviction of another host is no duplicate",
    ev: eviction("b", "h1", RUNNING, "2026-01-01T00:00:10Z"),
    world: {
      evictions: [eviction("a", "h2", { hypervisorServiceId: "svc-h2" })],
    },
    want: {
      evicting: undefined,
      end: undefined,
      events: ["Normal WaveSettled"],
    },
  },
];

Deno.test("gate: only the oldest Eviction of a host drains; the others wait as Duplicate", async () => {
  for (const row of DUPLICATE) {
    const { fx, step } = await run(row);
    assert.deepEqual(
      condOf(step.status, CONDITION_EVICTING),
      row.want.evicting,
      `${row.name}: Evicting`,
    );
    assert.deepEqual(step.end, row.want.end, `${row.name}: end`);
    assert.deepEqual(eventsOf(fx), row.want.events, `${row.name}: events`);
    if (row.want.evicting !== undefined) {
      const message = step.status?.conditions?.find((c) =>
        c.type === CONDITION_EVICTING
      )?.message;
      assert.equal(message, DUPLICATE_MESSAGE, `${row.name}: message`);
    }
  }
});

// ------------------------------------------------------------- unregistered

/** A drain that ended because Nova never knew its host. */
const NOT_REGISTERED: EvictionStatus = {
  startedAt: "2026-01-01T00:30:00Z",
  finishedAt: "2026-01-01T00:30:00Z",
  conditions: [
    cond(CONDITION_PREFLIGHT, "True", "NotRegistered"),
    cond(CONDITION_EVICTING, "False", "NotInNova"),
  ],
};

const UNREGISTERED: Array<
  Scenario & {
    want: {
      end: NextLook | undefined;
      nova: string[];
      events: string[];
    };
  }
> = [
  {
    name: "checked 10 s ago: ends until the finished check, no Nova call",
    ev: eviction("a", "h1", NOT_REGISTERED),
    setup: (fx) => void (fx.pass.state.lastFinishedCheckMs = NOW - 10_000),
    want: { end: { inMs: 50_000 }, nova: [], events: [] },
  },
  {
    name: "checked just now: ends for the whole finished check",
    ev: eviction("a", "h1", NOT_REGISTERED),
    setup: (fx) => void (fx.pass.state.lastFinishedCheckMs = NOW),
    want: { end: { inMs: FINISHED_CHECK }, nova: [], events: [] },
  },
  {
    name: "a scaled clock: the wait is on it (requeue makes it real ms)",
    ev: eviction("a", "h1", NOT_REGISTERED),
    world: { deps: { clock: { now: () => NOW, rate: 10 } } },
    // the finished check is 600 s of clock at rate 10; 100 s of it passed
    setup: (fx) => void (fx.pass.state.lastFinishedCheckMs = NOW - 100_000),
    want: { end: { inMs: 500_000 }, nova: [], events: [] },
  },
  {
    name:
      "the finished check is due: Nova is asked again, no second DrainFinished",
    ev: eviction("a", "h1", NOT_REGISTERED),
    setup: (fx) =>
      void (fx.pass.state.lastFinishedCheckMs = NOW - FINISHED_CHECK),
    want: {
      end: { inMs: FINISHED_CHECK },
      nova: ["findComputeService h1"],
      events: [],
    },
  },
  {
    name: "no check remembered (a restart): Nova is asked at once",
    ev: eviction("a", "h1", NOT_REGISTERED),
    want: {
      end: { inMs: FINISHED_CHECK },
      nova: ["findComputeService h1"],
      events: [],
    },
  },
];

Deno.test("gate: a drain whose host never registered asks Nova again only at the finished check", async () => {
  for (const row of UNREGISTERED) {
    const calls: string[] = [];
    const { fx, step } = await run({
      ...row,
      world: { ...row.world, nova: novaWith(undefined, calls) },
    });
    assert.deepEqual(step.end, row.want.end, `${row.name}: end`);
    assert.deepEqual(calls, row.want.nova, `${row.name}: Nova calls`);
    assert.deepEqual(eventsOf(fx), row.want.events, `${row.name}: events`);
    if (row.want.nova.length > 0) {
      assert.equal(
        fx.pass.state.lastFinishedCheckMs,
        NOW,
        `${row.name}: the check is remembered`,
      );
    }
  }
});

// ---------------------------------------------------------------- preflight

/** The Nova calls of a preflight that disables h1's service now. */
const DISABLING = [
  "findComputeService h1",
  `setComputeServiceStatus svc-h1 false ${ourDisabledReason("test")}`,
];

const PREFLIGHT: Array<
  Scenario & {
    service: ComputeService | undefined;
    want: {
      end: NextLook | undefined;
      serviceId: string | undefined;
      preflight: [string, string];
      disabled: [string, string] | undefined;
      evicting: [string, string] | undefined;
      finished: boolean;
      disabledCall: boolean;
      events: string[];
      /** Text the first Event's message contains. */
      message: string;
    };
  }
> = [
  {
    name: "an enabled service: disabled now, DrainStarted names it",
    ev: eviction("a", "h1"),
    service: service("enabled"),
    want: {
      end: undefined,
      serviceId: "svc-h1",
      preflight: ["True", "Succeeded"],
      disabled: ["True", "Disabled"],
      evicting: undefined,
      finished: false,
      disabledCall: true,
      events: ["Normal DrainStarted", "Normal WaveSettled"],
      message: "draining host h1; compute service svc-h1 disabled",
    },
  },
  {
    name: "disabled by someone else: kept as it is, not disabled again",
    ev: eviction("a", "h1"),
    service: service("disabled", "broken disk"),
    want: {
      end: undefined,
      serviceId: "svc-h1",
      preflight: ["True", "Succeeded"],
      disabled: ["True", "AlreadyDisabled"],
      evicting: undefined,
      finished: false,
      disabledCall: false,
      events: ["Normal DrainStarted", "Normal WaveSettled"],
      message: "draining host h1",
    },
  },
  {
    name: "disabled by evictor before (a write lost): recorded as ours",
    ev: eviction("a", "h1"),
    service: service("disabled", ourDisabledReason("test")),
    want: {
      end: undefined,
      serviceId: "svc-h1",
      preflight: ["True", "Succeeded"],
      disabled: ["True", "Disabled"],
      evicting: undefined,
      finished: false,
      disabledCall: false,
      events: ["Normal DrainStarted", "Normal WaveSettled"],
      message: "draining host h1",
    },
  },
  {
    name: "started before: no second DrainStarted",
    ev: eviction("a", "h1", { startedAt: "2026-01-01T00:10:00Z" }),
    service: service("enabled"),
    want: {
      end: undefined,
      serviceId: "svc-h1",
      preflight: ["True", "Succeeded"],
      disabled: ["True", "Disabled"],
      evicting: undefined,
      finished: false,
      disabledCall: true,
      events: ["Normal WaveSettled"],
      message: "",
    },
  },
  {
    name: "no service, the Hypervisor has Nova ids: failed, a Warning",
    ev: eviction("a", "h1"),
    world: { hypervisors: [hypervisor("h1", { hypervisorId: "hv-1" })] },
    service: undefined,
    want: {
      end: { inMs: SLOW * 10 },
      serviceId: undefined,
      preflight: ["False", "HypervisorNotFound"],
      disabled: undefined,
      evicting: ["False", "Failed"],
      finished: false,
      disabledCall: false,
      events: ["Warning PreflightFailed"],
      message: "Nova has no nova-compute service on host h1",
    },
  },
  {
    name: "no service, no Hypervisor: never registered, finished",
    ev: eviction("a", "h1"),
    service: undefined,
    want: {
      end: { inMs: FINISHED_CHECK },
      serviceId: undefined,
      preflight: ["True", "NotRegistered"],
      disabled: undefined,
      evicting: ["False", "NotInNova"],
      finished: true,
      disabledCall: false,
      events: ["Normal DrainFinished"],
      message: "nothing drained: Nova has no compute service named h1",
    },
  },
  {
    name: "no service, a Hypervisor without Nova ids: never registered",
    ev: eviction("a", "h1"),
    world: { hypervisors: [hypervisor("h1", {})] },
    service: undefined,
    want: {
      end: { inMs: FINISHED_CHECK },
      serviceId: undefined,
      preflight: ["True", "NotRegistered"],
      disabled: undefined,
      evicting: ["False", "NotInNova"],
      finished: true,
      disabledCall: false,
      events: ["Normal DrainFinished"],
      message: "nothing drained",
    },
  },
];

Deno.test("gate: the preflight disables the compute service, or ends the drain", async () => {
  for (const row of PREFLIGHT) {
    const calls: string[] = [];
    const { fx, step } = await run({
      ...row,
      world: { ...row.world, nova: novaWith(row.service, calls) },
    });
    const { want } = row;
    assert.deepEqual(step.end, want.end, `${row.name}: end`);
    assert.equal(
      step.status?.hypervisorServiceId,
      want.serviceId,
      `${row.name}: service id`,
    );
    assert.deepEqual(
      condOf(step.status, CONDITION_PREFLIGHT),
      want.preflight,
      `${row.name}: Preflight`,
    );
    assert.deepEqual(
      condOf(step.status, CONDITION_HYPERVISOR_DISABLED),
      want.disabled,
      `${row.name}: HypervisorDisabled`,
    );
    assert.deepEqual(
      condOf(step.status, CONDITION_EVICTING),
      want.evicting,
      `${row.name}: Evicting`,
    );
    assert.equal(
      step.status?.finishedAt,
      want.finished ? iso(NOW) : undefined,
      `${row.name}: finishedAt`,
    );
    assert.deepEqual(
      calls,
      want.disabledCall ? DISABLING : ["findComputeService h1"],
      `${row.name}: Nova calls`,
    );
    assert.deepEqual(eventsOf(fx), want.events, `${row.name}: events`);
    assert.ok(
      fx.events[0]?.message.includes(want.message),
      `${row.name}: ${JSON.stringify(fx.events[0]?.message)} has ${
        JSON.stringify(want.message)
      }`,
    );
    if (want.serviceId !== undefined) {
      assert.equal(
        step.status?.startedAt,
        row.ev.status?.startedAt ?? iso(NOW),
        `${row.name}: startedAt`,
      );
    }
    if (want.finished) {
      assert.equal(
        fx.pass.state.lastFinishedCheckMs,
        NOW,
        `${row.name}: the check is remembered`,
      );
    }
  }
});

Deno.test("gate: a preflight failure recorded already raises no second Warning", async () => {
  const hypervisors = [hypervisor("h1", { hypervisorId: "hv-1" })];
  const before = await preflight(novaWith(undefined, []), {
    host: "h1",
    reason: "test",
    hypervisor: hypervisors[0],
    status: {},
    now: new Date(NOW - 60_000),
    generation: 1,
  });
  assert.equal(before.kind, "failed");
  const fx = passFixture(eviction("a", "h1", before.status), {
    hypervisors,
    nova: novaWith(undefined, []),
  });
  const step = await gate(fx.pass);
  assert.deepEqual(step.end, { inMs: SLOW * 10 });
  assert.deepEqual(step.status, before.status, "the status stays as it was");
  assert.deepEqual(fx.events, []);
});

Deno.test("gate: a failing Nova call fails the pass", async () => {
  const fx = passFixture(eviction("a", "h1"), {
    nova: {
      findComputeService: () => Promise.reject(new Error("nova down")),
    },
  });
  await assert.rejects(gate(fx.pass), /nova down/);
});

// --------------------------------------------------------------------- wave

/** A peer of another host: pending (no service id) unless `status` says otherwise. */
const peer = (name: string, status: EvictionStatus = {}) =>
  eviction(name, `host-${name}`, status);

const WAITING_FOR_B =
  "host h1 is disabled; migrations start once these are disabled too: b";

const WAVE: Array<
  Scenario & {
    want: {
      end: NextLook | undefined;
      wave: [string, string] | undefined;
      /** The hold's message, or undefined when the starts are not held. */
      hold: string | undefined;
      events: string[];
    };
  }
> = [
  {
    name: "no other pending Eviction: settled",
    ev: eviction("a", "h1", RUNNING),
    want: {
      end: undefined,
      wave: ["True", "AllDisabled"],
      hold: undefined,
      events: ["Normal WaveSettled"],
    },
  },
  {
    name: "settled already: no Event again",
    ev: eviction("a", "h1", {
      ...RUNNING,
      conditions: [
        cond(
          CONDITION_WAVE_SETTLED,
          "True",
          "AllDisabled",
          "every other pending Eviction's compute service is disabled",
        ),
      ],
    }),
    want: {
      end: undefined,
      wave: ["True", "AllDisabled"],
      hold: undefined,
      events: [],
    },
  },
  {
    name:
      "a peer's host still enabled, nothing in flight: ends a poll interval",
    ev: eviction("a", "h1", RUNNING),
    world: { evictions: [peer("b")] },
    want: {
      end: { inMs: POLL },
      wave: ["False", "WaitingForWave"],
      hold: undefined,
      events: ["Normal WaitingForWave"],
    },
  },
  {
    name: "the bound nearer than a poll interval: ends when it passes",
    ev: eviction("a", "h1", RUNNING),
    world: { evictions: [peer("b")] },
    setup: (fx) => void fx.pass.state.waveSeen.set("b", NOW - 14_700),
    want: {
      end: { inMs: 300 },
      wave: ["False", "WaitingForWave"],
      hold: undefined,
      events: ["Normal WaitingForWave"],
    },
  },
  {
    name: "waiting already: no Event again",
    ev: eviction("a", "h1", {
      ...RUNNING,
      conditions: [
        cond(
          CONDITION_WAVE_SETTLED,
          "False",
          "WaitingForWave",
          WAITING_FOR_B,
          iso(NOW - 2_000),
        ),
      ],
    }),
    world: { evictions: [peer("b")] },
    want: {
      end: { inMs: POLL },
      wave: ["False", "WaitingForWave"],
      hold: undefined,
      events: [],
    },
  },
  {
    name: "migrations in flight: watched on, only the starts held",
    ev: eviction("a", "h1", {
      ...RUNNING,
      inFlight: [{
        id: "vm1",
        kind: "live",
        startedAt: "2026-01-01T00:50:00Z",
      }],
    }),
    world: { evictions: [peer("b")] },
    want: {
      end: undefined,
      wave: ["False", "WaitingForWave"],
      hold: WAITING_FOR_B,
      events: ["Normal WaitingForWave"],
    },
  },
  {
    name: "a peer enabled for the whole bound: goes, naming it",
    ev: eviction("a", "h1", RUNNING),
    world: { evictions: [peer("b")] },
    setup: (fx) => void fx.pass.state.waveSeen.set("b", NOW - 15_000),
    want: {
      end: undefined,
      wave: ["True", "SettleBoundPassed"],
      hold: undefined,
      events: ["Normal WaveSettled"],
    },
  },
  {
    name: "the wait runs from when the drain began waiting, if later",
    ev: eviction("a", "h1", {
      ...RUNNING,
      conditions: [
        cond(
          CONDITION_WAVE_SETTLED,
          "False",
          "WaitingForWave",
          WAITING_FOR_B,
          iso(NOW - 5_000),
        ),
      ],
    }),
    world: { evictions: [peer("b")] },
    setup: (fx) => void fx.pass.state.waveSeen.set("b", NOW - 60_000),
    want: {
      end: { inMs: POLL },
      wave: ["False", "WaitingForWave"],
      hold: undefined,
      events: [],
    },
  },
  {
    name: "a peer disabled already does not hold",
    ev: eviction("a", "h1", RUNNING),
    world: { evictions: [peer("b", { hypervisorServiceId: "svc-b" })] },
    want: {
      end: undefined,
      wave: ["True", "AllDisabled"],
      hold: undefined,
      events: ["Normal WaveSettled"],
    },
  },
  {
    name: "a peer whose preflight failed does not hold",
    ev: eviction("a", "h1", RUNNING),
    world: {
      evictions: [
        peer("b", {
          conditions: [
            cond(CONDITION_PREFLIGHT, "False", "HypervisorNotFound"),
          ],
        }),
      ],
    },
    want: {
      end: undefined,
      wave: ["True", "AllDisabled"],
      hold: undefined,
      events: ["Normal WaveSettled"],
    },
  },
  {
    name: "a peer waiting behind an older Eviction of its host does not hold",
    ev: eviction("a", "h1", RUNNING),
    world: {
      evictions: [
        eviction("b1", "hb", { hypervisorServiceId: "svc-b" }),
        eviction("b2", "hb", {}, "2026-01-01T00:00:10Z"),
      ],
    },
    want: {
      end: undefined,
      wave: ["True", "AllDisabled"],
      hold: undefined,
      events: ["Normal WaveSettled"],
    },
  },
  {
    name: "another partition's pending Eviction holds too (allEvictions)",
    ev: eviction("a", "h1", RUNNING),
    world: {
      deps: {
        allEvictions: {
          list: () => [eviction("a", "h1", RUNNING), peer("b")],
        },
      },
    },
    want: {
      end: { inMs: POLL },
      wave: ["False", "WaitingForWave"],
      hold: undefined,
      events: ["Normal WaitingForWave"],
    },
  },
  {
    name: "a finished drain is not gated by its wave",
    ev: eviction("a", "h1", { ...RUNNING, finishedAt: "2026-01-01T00:40:00Z" }),
    world: { evictions: [peer("b")] },
    want: { end: undefined, wave: undefined, hold: undefined, events: [] },
  },
];

Deno.test("gate: the wave holds the starts while another pending Eviction's host is enabled", async () => {
  for (const row of WAVE) {
    const { fx, step } = await run(row);
    const { want } = row;
    assert.deepEqual(step.end, want.end, `${row.name}: end`);
    assert.deepEqual(
      condOf(step.status, CONDITION_WAVE_SETTLED),
      want.wave,
      `${row.name}: WaveSettled`,
    );
    assert.equal(step.hold, want.hold, `${row.name}: hold`);
    assert.equal(step.after, undefined, `${row.name}: nothing to wake`);
    assert.deepEqual(eventsOf(fx), want.events, `${row.name}: events`);
    if (want.end !== undefined) {
      assert.ok(
        want.end.inMs !== undefined &&
          want.end.inMs <= fx.pass.times.pollMs,
        `${row.name}: waits at most a poll interval`,
      );
    }
  }
});

Deno.test("gate: a host newly disabled wakes, after the write, the peers waiting for their wave", async () => {
  const waiting = (name: string, status: "True" | "False") =>
    peer(name, {
      hypervisorServiceId: `svc-${name}`,
      conditions: [
        cond(
          CONDITION_WAVE_SETTLED,
          status,
          status === "False" ? "WaitingForWave" : "AllDisabled",
        ),
      ],
    });
  const rows: Array<
    Scenario & { want: { after: boolean; woken: string[] } }
  > = [
    {
      name: "disabled by this pass: the waiting peer is woken",
      ev: eviction("a", "h1"),
      world: { evictions: [waiting("c", "False"), waiting("d", "True")] },
      want: { after: true, woken: ["c"] },
    },
    {
      name: "a peer only another process drains (not cached) is not woken",
      ev: eviction("a", "h1"),
      world: {
        deps: {
          allEvictions: {
            list: () => [eviction("a", "h1"), waiting("c", "False")],
          },
        },
      },
      want: { after: true, woken: [] },
    },
    {
      name: "disabled before this pass: nothing to wake",
      ev: eviction("a", "h1", RUNNING),
      world: { evictions: [waiting("c", "False")] },
      want: { after: false, woken: [] },
    },
  ];
  for (const row of rows) {
    const { fx, step } = await run({
      ...row,
      world: { ...row.world, nova: novaWith(service("enabled"), []) },
    });
    assert.equal(
      step.after !== undefined,
      row.want.after,
      `${row.name}: after`,
    );
    assert.deepEqual(fx.enqueued, [], `${row.name}: nobody woken before`);
    step.after?.();
    assert.deepEqual(fx.enqueued, row.want.woken, `${row.name}: woken`);
  }
});

// -------------------------------------------------------------------- retry

const FAILED_AT = "2026-01-01T00:40:00Z";
const WITH_FAILURES: EvictionStatus = {
  ...RUNNING,
  failed: [
    {
      id: "vm1",
      reason: "no valid host",
      attempts: 5,
      lastAttemptAt: FAILED_AT,
    },
    { id: "vm2", reason: "error", attempts: 5, lastAttemptAt: FAILED_AT },
  ],
  skipped: [
    { id: "vm3", reason: `${UNSUPPORTED_PREFIX}pci passthrough` },
    { id: "vm4", reason: "SUSPENDED" },
  ],
};

const RETRY: Array<
  Scenario & {
    want: {
      retry: string | undefined;
      failed: string[];
      skipped: string[];
      /** The RetryRequested Event's message; undefined: none. */
      message: string | undefined;
      end: NextLook | undefined;
    };
  }
> = [
  {
    name: "one failed VM named: re-armed",
    ev: annotated(eviction("a", "h1", WITH_FAILURES), RETRY_ANNOTATION, "vm1"),
    want: {
      retry: "vm1",
      failed: ["vm2"],
      skipped: ["vm3", "vm4"],
      message: "re-armed vm1",
      end: undefined,
    },
  },
  {
    name: "*: every failed VM and every one Nova would not move live",
    ev: annotated(eviction("a", "h1", WITH_FAILURES), RETRY_ANNOTATION, "*"),
    want: {
      retry: "*",
      failed: [],
      skipped: ["vm4"],
      message: "re-armed vm1, vm2, vm3",
      end: undefined,
    },
  },
  {
    name: "a VM that did not fail is named as ignored",
    ev: annotated(
      eviction("a", "h1", WITH_FAILURES),
      RETRY_ANNOTATION,
      "vm9, vm2, vm4",
    ),
    want: {
      retry: "vm9, vm2, vm4",
      failed: ["vm1"],
      skipped: ["vm3", "vm4"],
      message: "re-armed vm2; not failed, ignored: vm4, vm9",
      end: undefined,
    },
  },
  {
    name: "nothing failed: the request is consumed all the same",
    ev: annotated(eviction("a", "h1", RUNNING), RETRY_ANNOTATION, "vm1"),
    want: {
      retry: "vm1",
      failed: [],
      skipped: [],
      message: "re-armed no VM; not failed, ignored: vm1",
      end: undefined,
    },
  },
  {
    name: "no annotation: nothing re-armed",
    ev: eviction("a", "h1", WITH_FAILURES),
    want: {
      retry: undefined,
      failed: ["vm1", "vm2"],
      skipped: ["vm3", "vm4"],
      message: undefined,
      end: undefined,
    },
  },
  {
    name: "another annotation: nothing re-armed",
    ev: annotated(eviction("a", "h1", WITH_FAILURES), "example.com/x", "vm1"),
    want: {
      retry: undefined,
      failed: ["vm1", "vm2"],
      skipped: ["vm3", "vm4"],
      message: undefined,
      end: undefined,
    },
  },
  {
    name: "a finished drain retried: looks at once, though a look is not due",
    ev: annotated(
      eviction("a", "h1", { ...WITH_FAILURES, finishedAt: FAILED_AT }),
      RETRY_ANNOTATION,
      "vm1",
    ),
    setup: (fx) => void (fx.pass.state.lastFinishedCheckMs = NOW - 100),
    want: {
      retry: "vm1",
      failed: ["vm2"],
      skipped: ["vm3", "vm4"],
      message: "re-armed vm1",
      end: undefined,
    },
  },
  {
    name: "the same finished drain not retried: waits for its next look",
    ev: eviction("a", "h1", { ...WITH_FAILURES, finishedAt: FAILED_AT }),
    setup: (fx) => void (fx.pass.state.lastFinishedCheckMs = NOW - 100),
    want: {
      retry: undefined,
      failed: ["vm1", "vm2"],
      skipped: ["vm3", "vm4"],
      message: undefined,
      // finished 20 min before the last look: the slow check, less 100 ms
      end: { inMs: FINISHED_CHECK - 100 },
    },
  },
];

Deno.test("gate: a retry annotation re-arms the failed VMs it names", async () => {
  for (const row of RETRY) {
    const { fx, step } = await run(row);
    const { want } = row;
    assert.equal(step.retry, want.retry, `${row.name}: retry`);
    const status = step.status ?? fx.pass.status;
    assert.deepEqual(
      (status.failed ?? []).map((f) => f.id),
      want.failed,
      `${row.name}: failed`,
    );
    assert.deepEqual(
      (status.skipped ?? []).map((s) => s.id),
      want.skipped,
      `${row.name}: skipped`,
    );
    const retried = fx.events.filter((e) => e.reason === "RetryRequested");
    assert.deepEqual(
      retried.map((e) => e.message),
      want.message === undefined ? [] : [want.message],
      `${row.name}: RetryRequested`,
    );
    assert.deepEqual(step.end, want.end, `${row.name}: end`);
  }
});

// ----------------------------------------------------------------- finished

/** A drain finished `forMs` before its last look, `sinceMs` ago. */
function finished(
  name: string,
  forMs: number,
  sinceMs: number | undefined,
  world: PassWorld = {},
): Scenario {
  const lastMs = sinceMs === undefined ? NOW - 30_000 : NOW - sinceMs;
  return {
    name,
    ev: eviction("a", "h1", { ...RUNNING, finishedAt: iso(lastMs - forMs) }),
    world,
    setup: (fx) =>
      void (fx.pass.state.lastFinishedCheckMs = sinceMs === undefined
        ? undefined
        : lastMs),
  };
}

const FINISHED: Array<
  Scenario & { want: NextLook | undefined }
> = [
  {
    ...finished("no look in this process yet: looks at once", 0, undefined),
    want: undefined,
  },
  {
    ...finished("just finished: the next look a poll interval on", 100, 200),
    want: { inMs: POLL - 200 },
  },
  {
    ...finished("finished 10 s before the last look: 10 s apart", 10_000, 500),
    want: { inMs: 9_500 },
  },
  {
    ...finished("the spacing has passed: looks", 5_000, 5_000),
    want: undefined,
  },
  {
    ...finished(
      "finished an hour ago: the slow finished check",
      3_600_000,
      30_000,
    ),
    want: { inMs: FINISHED_CHECK - 30_000 },
  },
  {
    ...finished(
      "the Hypervisor reports instances, a poll interval since: looks",
      3_600_000,
      POLL,
      {
        hypervisors: [hypervisor("h1", { numInstances: 2 })],
      },
    ),
    want: undefined,
  },
  {
    ...finished(
      "the Hypervisor reports instances, within a poll interval: waits the rest",
      3_600_000,
      300,
      {
        hypervisors: [hypervisor("h1", { numInstances: 2 })],
      },
    ),
    want: { inMs: POLL - 300 },
  },
  {
    ...finished(
      "the Hypervisor reports none: the spacing holds",
      3_600_000,
      5_000,
      {
        hypervisors: [hypervisor("h1", { numInstances: 0 })],
      },
    ),
    want: { inMs: FINISHED_CHECK - 5_000 },
  },
  {
    ...finished(
      "the informer watches the host: the slow check at once",
      1_000,
      10_000,
      {
        informer: { watching: () => true },
      },
    ),
    want: { inMs: FINISHED_CHECK - 10_000 },
  },
  {
    ...finished("the informer saw a VM come: looks at once", 3_600_000, 100, {
      informer: { woken: () => true },
    }),
    want: undefined,
  },
];

Deno.test("gate: a finished drain looks at Nova when a look is due, else ends the pass", async () => {
  for (const row of FINISHED) {
    const { fx, step } = await run(row);
    assert.deepEqual(step.end, row.want, `${row.name}: end`);
    assert.equal(
      fx.pass.deps.memory.ledger.get("a"),
      0,
      `${row.name}: holds no budget`,
    );
    assert.deepEqual(fx.events, [], `${row.name}: no Event`);
  }
});

// ---------------------------------------------------------------- read-only

Deno.test("gate: never changes the pass it reads", async () => {
  const all: Scenario[] = [
    ...DUPLICATE,
    ...UNREGISTERED,
    ...PREFLIGHT.map((r) => ({
      ...r,
      world: { ...r.world, nova: novaWith(r.service, []) },
    })),
    ...WAVE,
    ...RETRY,
    ...FINISHED,
  ];
  for (const row of all) {
    const fx = passFixture(row.ev, {
      nova: novaWith(service("enabled"), []),
      ...row.world,
    });
    row.setup?.(fx);
    const { pass } = fx;
    const before = structuredClone({ status: pass.status, ev: pass.ev });
    const status = pass.status;
    await gate(pass);
    assert.equal(pass.status, status, `${row.name}: the same status object`);
    assert.deepEqual(
      { status: pass.status, ev: pass.ev },
      before,
      `${row.name}: status and Eviction unchanged`,
    );
    assert.deepEqual(fx.writes, [], `${row.name}: no status write`);
    assert.equal(pass.waveHold, undefined, `${row.name}: no hold set`);
    assert.equal(pass.retryValue, undefined, `${row.name}: no retry set`);
    assert.equal(pass.afterRecord.length, 0, `${row.name}: nothing to follow`);
  }
});
