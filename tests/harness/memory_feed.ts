/**
 * An in-process {@linkcode NotificationFeed} for tests: what is published
 * to it is delivered to its listeners at once, in order, while it is up;
 * `down()` loses what is published until `up()` (a new epoch), as a
 * broken AMQP connection does.
 *
 * @module
 */

import type {
  FeedState,
  NotificationFeed,
  NovaNotification,
} from "../../openstack/notification_types.ts";

/** A feed the test drives. */
export class MemoryFeed implements NotificationFeed {
  #state: FeedState = "up";
  #epoch = 1;
  readonly #listeners = new Set<(n: NovaNotification) => void>();
  readonly #stateListeners = new Set<
    (state: FeedState, epoch: number) => void
  >();
  /** Events lost while down (or dropped by `drop`), for assertions. */
  lost = 0;
  /** Drops the next event for which this returns true (a missed event). */
  drop: ((n: NovaNotification) => boolean) | undefined;

  get state(): FeedState {
    return this.#state;
  }

  get epoch(): number {
    return this.#epoch;
  }

  listen(listener: (n: NovaNotification) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  onState(listener: (state: FeedState, epoch: number) => void): () => void {
    this.#stateListeners.add(listener);
    return () => this.#stateListeners.delete(listener);
  }

  /** Delivers `n` to every listener (lost while down). */
  publish(n: NovaNotification): void {
    if (this.#state === "down") {
      this.lost++;
      return;
    }
    if (this.drop?.(n) === true) {
      this.drop = undefined;
      this.lost++;
      return;
    }
    for (const l of this.#listeners) l(n);
  }

  /** The connection is lost. */
  down(): void {
    if (this.#state === "down") return;
    this.#state = "down";
    for (const l of this.#stateListeners) l("down", this.#epoch);
  }

  /** Subscribed again: a new epoch. */
  up(): void {
    if (this.#state === "up") return;
    this.#epoch++;
    this.#state = "up";
    for (const l of this.#stateListeners) l("up", this.#epoch);
  }

  close(): Promise<void> {
    this.down();
    this.#listeners.clear();
    this.#stateListeners.clear();
    return Promise.resolve();
  }
}
