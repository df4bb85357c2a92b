/**
 * The listeners of a {@linkcode NotificationFeed}: of its notifications and
 * of its state changes. Shared by the AMQP feed and the tests' in-process
 * one, so both call listeners the same way.
 *
 * @module
 */

import type {
  FeedState,
  NotificationFeed,
  NovaNotification,
} from "./notification_types.ts";

/** A listener of a feed's state changes. */
export type StateListener = (state: FeedState, epoch: number) => void;

/**
 * The listeners of one feed. A listener that throws is reported to
 * `onError` (when given; the other listeners are still called) or its
 * error propagates to whoever delivered (without).
 *
 * @example
 * ```ts
 * import { FeedListeners } from "./feed_listeners.ts";
 * const listeners = new FeedListeners();
 * const seen: string[] = [];
 * const stop = listeners.onState((state, epoch) => seen.push(`${state}@${epoch}`));
 * listeners.stateChanged("up", 1);
 * stop();
 * listeners.stateChanged("down", 1);
 * console.log(seen); // ["up@1"]
 * ```
 */
export class FeedListeners
  implements Pick<NotificationFeed, "listen" | "onState"> {
  readonly #onError:
    | ((kind: "listener" | "state listener", error: unknown) => void)
    | undefined;
  readonly #listeners = new Set<(n: NovaNotification) => void>();
  readonly #stateListeners = new Set<StateListener>();

  constructor(
    onError?: (kind: "listener" | "state listener", error: unknown) => void,
  ) {
    this.#onError = onError;
  }

  /** Registers a listener of every notification; returns its removal. */
  listen(listener: (n: NovaNotification) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Registers a listener of state changes; returns its removal. */
  onState(listener: StateListener): () => void {
    this.#stateListeners.add(listener);
    return () => this.#stateListeners.delete(listener);
  }

  /** Calls every notification listener with `n`. */
  deliver(n: NovaNotification): void {
    for (const l of [...this.#listeners]) this.#call("listener", () => l(n));
  }

  /** Calls every state listener with the new state. */
  stateChanged(state: FeedState, epoch: number): void {
    for (const l of [...this.#stateListeners]) {
      this.#call("state listener", () => l(state, epoch));
    }
  }

  /** Forgets every listener. */
  clear(): void {
    this.#listeners.clear();
    this.#stateListeners.clear();
  }

  #call(kind: "listener" | "state listener", fn: () => void): void {
    if (this.#onError === undefined) return fn();
    try {
      fn();
    } catch (e) {
      this.#onError(kind, e);
    }
  }
}
