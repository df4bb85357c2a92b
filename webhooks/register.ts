/**
 * Wires the pure validators to the framework's webhook server: one route
 * per kind, with the validators' contexts read from the operator's caches
 * of Evictions, Hypervisors and the EvictionPolicy. A thin adapter: every
 * decision is made by `validateEvictionPolicy` and `validateEviction`.
 *
 * Dry-run requests are validated like any other; nothing here has side
 * effects (no writes, no Events), so `sideEffects: None` holds.
 *
 * @module
 */

import { deny, type Validator } from "../framework/admission.ts";
import type { CacheReader } from "../framework/informer.ts";
import { defineKind, type KubeObject } from "../framework/kind.ts";
import { type Operator, validatePath } from "../framework/operator.ts";
import {
  type Eviction,
  type EvictionPolicy,
  EvictionPolicyResource,
  EvictionResource,
  type Hypervisor,
} from "../models/mod.ts";
import {
  effectiveSettings,
  type LimitSettings,
  POLICY_NAME,
} from "../limits/resolve.ts";
import {
  EvictionKind,
  EvictionPolicyKind,
  HypervisorKind,
} from "../controllers/kinds.ts";
import { objectValidator } from "./admission_review.ts";
import { evictionContextFrom, policyContextFrom } from "./context.ts";
import { validateEviction } from "./eviction.ts";
import { withActionRequests } from "./eviction_requests.ts";
import { validateEvictionPolicy } from "./eviction_policy.ts";

// The routes get the objects unparsed: the generated schemas would refuse
// a bad trait or a duplicate with zod's generic text before our validators
// could say precisely what is wrong (they parse what they need themselves).
const LoosePolicyKind = defineKind<KubeObject>(EvictionPolicyResource);
const LooseEvictionKind = defineKind<KubeObject>(EvictionResource);

/** The path the EvictionPolicy webhook is served at (the framework's default). */
export const POLICY_WEBHOOK_PATH: string = validatePath(EvictionPolicyResource);

/** The path the Eviction webhook is served at (the framework's default). */
export const EVICTION_WEBHOOK_PATH: string = validatePath(EvictionResource);

/**
 * The denial while the caches are still being filled: an empty cache would
 * let a second Eviction for a host through and judge a policy change
 * against no running drains. The Service sends no traffic to a replica
 * that is not ready (readiness waits for the caches), so this is only seen
 * when the API server calls a replica directly.
 */
export const NOT_SYNCED_MESSAGE =
  "the evictor webhook has not yet read the Evictions, Hypervisors and the EvictionPolicy; retry in a few seconds";

/** The caches the validators' contexts are read from. */
export interface WebhookCaches {
  /** Every Eviction. */
  readonly evictions: CacheReader<Eviction>;
  /** Every Hypervisor. */
  readonly hypervisors: CacheReader<Hypervisor>;
  /** The EvictionPolicy (only `default` counts). */
  readonly policies: CacheReader<EvictionPolicy>;
}

/** What {@linkcode registerWebhooks} needs besides the operator. */
export interface WebhookDeps {
  /** The settings from the start-up flags, in force while there is no EvictionPolicy. */
  readonly flagSettings: LimitSettings;
}

/** The framework validators of both kinds. */
export interface WebhookValidators {
  /** For EvictionPolicy. */
  readonly policy: Validator<KubeObject>;
  /** For Eviction. */
  readonly eviction: Validator<KubeObject>;
}

/** Denies with 503 while the caches are still being filled. */
function whenSynced(
  caches: WebhookCaches,
  validate: Validator<KubeObject>,
): Validator<KubeObject> {
  return (request) => {
    const synced = caches.evictions.hasSynced &&
      caches.hypervisors.hasSynced && caches.policies.hasSynced;
    return synced ? validate(request) : deny(NOT_SYNCED_MESSAGE, { code: 503 });
  };
}

/**
 * The two validators, reading their contexts from `caches` once per
 * CREATE or UPDATE request. Separate from {@linkcode registerWebhooks} so
 * that the wiring can be tested without an API server.
 *
 * @example
 * ```ts
 * import { webhookValidators } from "./register.ts";
 * import { parseConcurrencyFlags } from "../limits/flags.ts";
 * const flags = parseConcurrencyFlags("2", []);
 * const empty = { get: () => undefined, list: () => [], hasSynced: true };
 * if (flags.ok) {
 *   const v = webhookValidators(
 *     { evictions: empty, hypervisors: empty, policies: empty },
 *     flags.settings,
 *   );
 *   const object = { metadata: { name: "fast" }, spec: { maxConcurrentMigrations: 2 } };
 *   const r = await v.policy({
 *     uid: "1", operation: "CREATE", name: "fast", namespace: "", userInfo: {},
 *     dryRun: false, oldObject: undefined, object,
 *   });
 *   console.assert(!r.allowed);
 * }
 * ```
 */
export function webhookValidators(
  caches: WebhookCaches,
  flagSettings: LimitSettings,
): WebhookValidators {
  const hypervisorTraits = (name: string): readonly string[] | undefined => {
    const hv = caches.hypervisors.get(name);
    return hv === undefined ? undefined : hv.status?.traits ?? [];
  };
  return {
    policy: whenSynced(
      caches,
      objectValidator(
        validateEvictionPolicy,
        () => policyContextFrom(caches.evictions.list(), hypervisorTraits),
      ),
    ),
    eviction: whenSynced(
      caches,
      withActionRequests(
        objectValidator(validateEviction, () =>
          evictionContextFrom(
            caches.evictions.list(),
            hypervisorTraits,
            effectiveSettings(
              caches.policies.get(POLICY_NAME)?.spec,
              flagSettings,
            ),
            caches.policies.get(POLICY_NAME)?.spec.capacityCheck,
          )),
        Date.now,
      ),
    ),
  };
}

/**
 * Registers the validating webhooks of EvictionPolicy (at
 * {@linkcode POLICY_WEBHOOK_PATH}) and Eviction (at
 * {@linkcode EVICTION_WEBHOOK_PATH}) and the caches they read. Call before
 * `operator.start()`; the operator must be configured with a `webhook`.
 * They serve on every replica, leader or not.
 *
 * @example
 * ```ts
 * import { Operator } from "../framework/operator.ts";
 * import { parseConcurrencyFlags } from "../limits/flags.ts";
 * import { registerWebhooks } from "./register.ts";
 * const flags = parseConcurrencyFlags("4", ["CUSTOM_HANA_EXCLUSIVE_HOST=1"]);
 * if (flags.ok) {
 *   const operator = new Operator({ name: "evictor", handleSignals: false });
 *   registerWebhooks(operator, { flagSettings: flags.settings });
 * }
 * ```
 */
export function registerWebhooks(
  operator: Operator,
  deps: WebhookDeps,
): void {
  const validators = webhookValidators({
    evictions: operator.watch(EvictionKind),
    hypervisors: operator.watch(HypervisorKind),
    policies: operator.watch(EvictionPolicyKind),
  }, deps.flagSettings);
  operator.validate(LoosePolicyKind, validators.policy, {
    path: POLICY_WEBHOOK_PATH,
  });
  operator.validate(LooseEvictionKind, validators.eviction, {
    path: EVICTION_WEBHOOK_PATH,
  });
}
