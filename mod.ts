/**
 * evictor's public surface: the kopf-like operator framework (`framework/`,
 * which knows nothing about OpenStack) and the types and zod schemas of
 * evictor's custom resources, generated from the CRDs (`models/`). The
 * OpenStack client has its own entry point, `openstack/mod.ts`; the
 * controllers, the webhooks and the command line are the program, not a
 * library.
 *
 * A complete small operator:
 *
 * ```ts
 * import { z } from "zod";
 * import { allow, defineKind, deny, Operator, TemporaryError } from "./mod.ts";
 *
 * const Widget = defineKind({
 *   group: "example.com", version: "v1", plural: "widgets", kind: "Widget", namespaced: true,
 * }, {
 *   schema: z.object({
 *     metadata: z.object({ name: z.string(), namespace: z.string() }).loose(),
 *     spec: z.object({ size: z.number().int() }),
 *     status: z.object({ observedSize: z.number().optional() }).optional(),
 *   }).loose(),
 * });
 *
 * const operator = new Operator({
 *   name: "widgets",
 *   leaderElection: { leaseNamespace: "default" },
 *   webhook: { certFile: "/tls/tls.crt", keyFile: "/tls/tls.key" },
 * });
 * operator.reconcile(Widget, async ({ object, updateStatus, event }) => {
 *   if (object === undefined) return; // gone: nothing left to do
 *   if (object.spec.size > 100) throw new TemporaryError("too big for now", { delayMs: 60_000 });
 *   await updateStatus((status) => ({ ...status, observedSize: object.spec.size }));
 *   await event("Normal", "Observed", `size ${object.spec.size}`);
 *   return { requeueAfterMs: 30_000 };
 * }, { maxConcurrent: 4 });
 * operator.finalize(Widget, ({ logger, key }) => logger.info({ key }, "cleaning up"));
 * operator.validate(Widget, ({ object }) =>
 *   (object?.spec.size ?? 0) >= 0 ? allow() : deny("spec.size must be >= 0"));
 *
 * if (import.meta.main) await operator.start(); // SIGTERM: graceful stop, exit 0
 * ```
 *
 * The models check what crosses the boundary, with the CRDs' own rules:
 *
 * ```ts
 * import { EvictionSchema } from "./mod.ts";
 * const eviction = EvictionSchema.parse({
 *   metadata: { name: "node042" },
 *   spec: { hypervisor: "node042", reason: "kernel 6.12" },
 * });
 * console.assert(eviction.spec.hypervisor === "node042");
 * console.assert(!EvictionSchema.safeParse({ spec: { hypervisor: "" } }).success);
 * ```
 *
 * @module
 */

// --- framework ---------------------------------------------------------------
export { parseAddress } from "./framework/address.ts";
export {
  admissionResponse,
  allow,
  deny,
  handleAdmission,
} from "./framework/admission.ts";
export type {
  AdmissionOutcome,
  AdmissionRequest,
  AdmissionResult,
  AdmissionUser,
  Validator,
} from "./framework/admission.ts";
export {
  backoffDelay,
  DEFAULT_BACKOFF_BASE_MS,
  DEFAULT_BACKOFF_MAX_MS,
  KeyBackoff,
} from "./framework/backoff.ts";
export type { BackoffOptions } from "./framework/backoff.ts";
export {
  KubeClient,
  objectPath,
  WatchStalledError,
} from "./framework/client.ts";
export type {
  KubeClientOptions,
  ListResult,
  PatchType,
  Query,
  RequestOptions,
  WatchEvent,
} from "./framework/client.ts";
export { ManualClock, systemClock } from "./framework/clock.ts";
export type { CancelTimer, Clock } from "./framework/clock.ts";
export { Controller } from "./framework/controller.ts";
export type {
  ControllerDeps,
  TimerRegistration,
} from "./framework/controller.ts";
export {
  ApiError,
  failureHints,
  isApiStatus,
  PermanentError,
  StartupError,
  TemporaryError,
} from "./framework/errors.ts";
export type {
  FailureHints,
  TemporaryErrorOptions,
} from "./framework/errors.ts";
export { EventRecorder } from "./framework/events.ts";
export type { EventSpec, EventType } from "./framework/events.ts";
export { related } from "./framework/handler.ts";
export type {
  FinalizeHandler,
  FinalizeResult,
  HandlerContext,
  ReconcileHandler,
  ReconcileOptions,
  ReconcileResult,
  RelatedWatch,
  StatusOf,
  TimerHandler,
} from "./framework/handler.ts";
export { HealthServer } from "./framework/health_server.ts";
export type { Check, HealthServerOptions } from "./framework/health_server.ts";
export {
  DEFAULT_SERVER_LIMITS,
  type ServerLimits,
} from "./framework/http_server.ts";
export { MetricsServer } from "./framework/metrics_server.ts";
export type { MetricsServerOptions } from "./framework/metrics_server.ts";
export { ServingCertificate } from "./framework/serving_cert.ts";
export type { ServingTls } from "./framework/serving_cert.ts";
export { Informer } from "./framework/informer.ts";
export {
  kubeconfigDocument,
  kubeconfigPathsFromEnv,
  loadDefaultCredentials,
  mergeKubeconfigs,
  readKubeconfigFile,
  readKubeconfigFiles,
  readKubeconfigs,
  selectContext,
} from "./framework/kubeconfig.ts";
export type {
  ClusterCredentials,
  KubeconfigFile,
  MergedKubeconfig,
} from "./framework/kubeconfig.ts";
export type {
  CacheReader,
  InformerEvent,
  InformerOptions,
} from "./framework/informer.ts";
export {
  apiVersionOf,
  defineKind,
  kindId,
  kindPath,
  objectKey,
  parseKey,
} from "./framework/kind.ts";
export type {
  Kind,
  KindDescriptor,
  KindOptions,
  KubeObject,
  ObjectMeta,
  PathOptions,
} from "./framework/kind.ts";
export {
  decideLease,
  DEFAULT_LEADER_TIMING,
  LeaderElector,
  microTime,
  validateTiming,
} from "./framework/leader.ts";
export type {
  LeaderElectorOptions,
  LeaderTiming,
  Lease,
  LeaseDecision,
  LeaseSpec,
} from "./framework/leader.ts";
export { createLogger, silentLogger } from "./framework/logger.ts";
export type {
  LogDestination,
  Logger,
  LoggerOptions,
} from "./framework/logger.ts";
export { FrameworkMetrics } from "./framework/metrics.ts";
export type {
  MetricsOptions,
  ReconcileResult as ReconcileOutcome,
} from "./framework/metrics.ts";
export { Operator, validatePath } from "./framework/operator.ts";
export type {
  CacheOptions,
  CertificateOption,
  LeaderElectionOptions,
  MetricsEndpointOptions,
  OperatorOptions,
  StopReason,
  WebhookOptions,
} from "./framework/operator.ts";
export { WorkQueue } from "./framework/queue.ts";
export type { WorkQueueOptions } from "./framework/queue.ts";
export { generateSelfSignedCertificate } from "./framework/self_signed.ts";
export type {
  CertificatePair,
  SelfSignedOptions,
} from "./framework/self_signed.ts";
export { patchStatus, updateStatus } from "./framework/status.ts";
export type { UpdateStatusOptions, WithStatus } from "./framework/status.ts";
export {
  DEFAULT_WEBHOOK_LIMITS,
  WebhookServer,
} from "./framework/webhook_server.ts";
export type {
  WebhookLimits,
  WebhookRoute,
  WebhookServerOptions,
  WebhookTls,
} from "./framework/webhook_server.ts";

// --- models --------------------------------------------------------------------
// Eviction, EvictionPolicy and Hypervisor: types, zod schemas, API versions.
// Both sides name a type `ObjectMeta`: the framework's (above) is the one
// exported under that name, as an explicit export wins over `export *`; the
// models' is `z.infer<typeof ObjectMetaSchema>`.
export * from "./models/mod.ts";
