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
import {
  FeedListeners,
  type StateListener,
} from "../../openstack/feed_listeners.ts";

/** A feed the test drives. */
export class MemoryFeed implements NotificationFeed {
  #state: FeedState = "up";
  #epoch = 1;
  // no error handler: a listener's failure fails the test that published
  readonly #listeners = new FeedListeners();
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
    return this.#listeners.listen(listener);
  }

  onState(listener: StateListener): () => void {
    return this.#listeners.onState(listener);
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
    this.#listeners.deliver(n);
  }

  /** The connection is lost. */
  down(): void {
    if (this.#state === "down") return;
    this.#state = "down";
    this.#listeners.stateChanged("down", this.#epoch);
  }

  /** Subscribed again: a new epoch. */
  up(): void {
    if (this.#state === "up") return;
    this.#epoch++;
    this.#state = "up";
    this.#listeners.stateChanged("up", this.#epoch);
  }

  close(): Promise<void> {
    this.down();
    this.#listeners.clear();
    return Promise.resolve();
  }
}
