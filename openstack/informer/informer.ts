/**
 * What a drain knows of its host's Nova state, and how fresh: the
 * informer below the drain's pass, in the shape of client-go's
 * tools/cache. The informer owns its listing and its trust; the pass
 * reads it and never asks where its facts come from.
 *
 * - {@linkcode HostInformer.snapshot}: the host's cached state when the
 *   informer vouches for it (trusted, listed recently enough), else
 *   nothing: the pass then looks afresh.
 * - {@linkcode HostInformer.look}: a direct look at Nova (the list the
 *   drain gives it), which becomes the host's cache.
 * - Changes on the host wake its drain through the controller's queue
 *   (the `wake` the informer is built with), as informer handlers do.
 *
 * Two informers implement it: {@linkcode PollingInformer} (no cache:
 * every pass looks) and the notified one (notified_informer.ts: a list
 * and Nova's notifications since, trusted only while proven right).
 *
 * @module
 */

import type { EvictionStatus } from "../../models/mod.ts";
import type { Observation } from "./snapshot.ts";

/** A start the drain sent, as the informer checks its cache against it. */
export interface StartProbe {
  /** Server id. */
  id: string;
  /** Nova's answer so far. */
  state: "pending" | "accepted" | "refused" | "conflict" | "unknown";
  /** Nova's message (a refusal's). */
  message?: string;
  /** Drain clock when it was sent. */
  issuedAtMs?: number;
  /** Drain clock when its answer came. */
  answeredAtMs?: number;
}

/** What a drain asks of the cache. */
export interface SnapshotRequest {
  /** The oldest list (drain clock ms) the snapshot may rest on. */
  maxAgeMs: number;
  /** The drain's status: the VMs whose departure the snapshot must tell. */
  status: EvictionStatus;
  /** The VMs' sizes as last seen. */
  ram: (id: string) => number | undefined;
  /** The drain's starts, against which the informer checks its cache. */
  starts: Iterable<StartProbe>;
  /**
   * Nova's limit on the host's live migrations as the drain learned it
   * from a list, if it did: while that many copy, a VM of ours in a live
   * migration with no record waits in Nova's queue, as expected.
   */
  novaLimit?: number | undefined;
  /**
   * By when (drain clock) the end of each live migration of ours should
   * have been heard of: the pacing model's expected end and a stated
   * bound. A view still showing one moving past it looks at Nova.
   */
  endsBy?: ReadonlyMap<string, number> | undefined;
}

/**
 * Whether a drain's notified view of its host is trusted, for its
 * Eviction's NovaNotifications condition: trusted, or demoted to polling
 * (the host's feed deaf or its view found wrong, or the whole feed).
 */
export type NotificationStanding =
  | { trusted: true }
  | {
    trusted: false;
    /** Why: a start of ours not heard of in time, or a view found wrong. */
    reason: "deaf" | "wrong";
    /** The host's view, or the whole feed. */
    scope: "host" | "feed";
    /** What was found, in words. */
    detail: string;
  };

/** Something the informer found wrong with itself, for the drain to report. */
export interface InformerWarning {
  /** The Event's reason. */
  reason: string;
  /** The Event's message. */
  message: string;
}

/**
 * The cache of the draining hosts of one process, by drain key (the
 * Eviction's).
 */
export interface HostInformer {
  /**
   * The host's state from the cache, when it may be planned from: trusted
   * and listed less than `maxAgeMs` (drain clock) ago; else undefined.
   * A read begins: the wakes so far are taken in by it.
   */
  snapshot(key: string, request: SnapshotRequest): Observation | undefined;
  /**
   * Whether {@linkcode snapshot} would give the host's state now (of any
   * age), with `novaLimit` as in {@linkcode SnapshotRequest}.
   */
  cached(key: string, novaLimit?: number): boolean;
  /**
   * A direct look: `list` reads Nova, and what it found (with the changes
   * heard of while it ran) becomes the host's cache. What `list` found is
   * returned unchanged. A look begins: the wakes so far are taken in by
   * it.
   */
  look(key: string, host: string, list: () => Promise<Observation>): Promise<
    Observation
  >;
  /** Whether a change on the host woke the drain since its last look. */
  woken(key: string): boolean;
  /**
   * Whether the drain will be woken when something comes to its host, so
   * a drain that holds nothing may look at the slow pace.
   */
  watching(key: string): boolean;
  /** What the informer found wrong with itself since the last call. */
  takeWarnings(key: string): InformerWarning[];
  /**
   * Whether the drain's notified view is trusted or demoted; undefined
   * without notifications, or while neither is known (not proven yet).
   */
  notifications(key: string): NotificationStanding | undefined;
  /** Forgets a drain's host. */
  forget(key: string): void;
  /** Stops the informer. */
  close(): void;
}

/**
 * The informer without a feed of changes: it caches nothing, so every
 * pass looks at Nova and nothing but the drain's own pacing wakes it.
 *
 * @example
 * ```ts
 * import { PollingInformer } from "./informer.ts";
 * const informer = new PollingInformer();
 * const empty = { servers: [], migrations: [], departed: [] };
 * const seen = await informer.look("ev", "h", () => Promise.resolve(empty));
 * console.assert(seen === empty);
 * console.assert(informer.snapshot() === undefined);
 * ```
 */
export class PollingInformer implements HostInformer {
  /** Nothing cached. */
  snapshot(): undefined {
    return undefined;
  }

  /** Nothing cached. */
  cached(): boolean {
    return false;
  }

  /** Lists. */
  look(
    _key: string,
    _host: string,
    list: () => Promise<Observation>,
  ): Promise<Observation> {
    return list();
  }

  /** Nothing wakes a drain. */
  woken(): boolean {
    return false;
  }

  /** Nothing watches. */
  watching(): boolean {
    return false;
  }

  /** Nothing goes wrong. */
  takeWarnings(): InformerWarning[] {
    return [];
  }

  /** No notifications. */
  notifications(): undefined {
    return undefined;
  }

  /** Nothing to forget. */
  forget(): void {}

  /** Nothing to stop. */
  close(): void {}
}
