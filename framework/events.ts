/**
 * An Events recorder: core/v1 Events attached to objects (so that
 * `kubectl describe` shows them), de-duplicated with counts.
 *
 * @module
 */

import type { KubeClient } from "./client.ts";
import { ApiError } from "./errors.ts";
import { apiVersionOf, type KindDescriptor, type KubeObject } from "./kind.ts";
import type { Logger } from "./logger.ts";
import { silentLogger } from "./logger.ts";

/** Event severity. */
export type EventType = "Normal" | "Warning";

/** One event to record. */
export interface EventSpec {
  /** Normal or Warning. */
  type: EventType;
  /** Short CamelCase reason, e.g. "MigrationStarted". */
  reason: string;
  /** Human-readable message. */
  message: string;
  /**
   * One Event per (object, type, reason) whatever the message: a repeat
   * updates its message, count and lastTimestamp (client-go's aggregation
   * of similar events), for routine summaries that come every pass.
   */
  series?: boolean;
}

/** The core/v1 Event kind (namespaced). */
export const EVENTS = {
  group: "",
  version: "v1",
  plural: "events",
  kind: "Event",
  namespaced: true,
} as const;

interface Seen {
  namespace: string;
  name: string;
  count: number;
}

const MAX_SEEN = 4096;

/**
 * Records events; repeats of the same (object, type, reason, message) bump
 * the count of the existing Event instead of creating a new one (a
 * `series` event: of the same reason, its message replaced). Never
 * throws: failures are logged.
 *
 * @example
 * ```ts ignore
 * const events = new EventRecorder(client, "evictor");
 * await events.record(Eviction, eviction, { type: "Normal", reason: "Started", message: "draining" });
 * ```
 */
export class EventRecorder {
  readonly #client: KubeClient;
  readonly #component: string;
  readonly #log: Logger;
  readonly #seen = new Map<string, Seen>();

  /** Creates a recorder reporting as `component`. */
  constructor(
    client: KubeClient,
    component: string,
    logger: Logger = silentLogger(),
  ) {
    this.#client = client;
    this.#component = component;
    this.#log = logger.child({ name: "events" });
  }

  /** Records `event` on `obj` of `kind`. */
  async record(
    kind: KindDescriptor,
    obj: KubeObject,
    event: EventSpec,
  ): Promise<void> {
    const md = obj.metadata ?? {};
    const name = md.name;
    if (name === undefined) {
      this.#log.warn(
        { reason: event.reason },
        "event for an object without a name dropped",
      );
      return;
    }
    const namespace = md.namespace || "default";
    const dedup = [
      md.uid ?? name,
      namespace,
      event.type,
      event.reason,
      event.series === true ? "\u0001series" : event.message,
    ].join(
      "\u0000",
    );
    const now = new Date().toISOString();
    const seen = this.#seen.get(dedup);
    try {
      if (seen !== undefined) {
        try {
          await this.#client.patch(EVENTS, `${seen.namespace}/${seen.name}`, {
            count: seen.count + 1,
            lastTimestamp: now,
            ...(event.series === true ? { message: event.message } : {}),
          });
          seen.count++;
          return;
        } catch (err) {
          if (!(err instanceof ApiError && err.status === 404)) throw err;
          this.#seen.delete(dedup);
        }
      }
      const evName = `${name}.${Date.now().toString(16)}${
        Math.floor(Math.random() * 0xffff).toString(16)
      }`;
      await this.#client.create(EVENTS, {
        metadata: { name: evName, namespace },
        involvedObject: {
          apiVersion: apiVersionOf(kind),
          kind: kind.kind,
          name,
          ...(md.namespace ? { namespace: md.namespace } : {}),
          ...(md.uid === undefined ? {} : { uid: md.uid }),
          ...(md.resourceVersion === undefined
            ? {}
            : { resourceVersion: md.resourceVersion }),
        },
        type: event.type,
        reason: event.reason,
        message: event.message,
        count: 1,
        firstTimestamp: now,
        lastTimestamp: now,
        source: { component: this.#component },
        reportingComponent: this.#component,
        reportingInstance: this.#component,
      } as KubeObject);
      if (this.#seen.size >= MAX_SEEN) {
        const oldest = this.#seen.keys().next();
        if (!oldest.done) this.#seen.delete(oldest.value);
      }
      this.#seen.set(dedup, { namespace, name: evName, count: 1 });
    } catch (err) {
      this.#log.warn(
        {
          err: err instanceof Error ? err.message : String(err),
          reason: event.reason,
        },
        "recording an event failed",
      );
    }
  }
}
