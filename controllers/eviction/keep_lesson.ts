/**
 * The adapter that writes what an ended drain learned (lesson.ts) to its
 * Hypervisor's `status.lastDrain`: a merge patch of that one field, so the
 * Hypervisor status sync's and the upstream agents' fields are untouched.
 * Where the installed CRD prunes that field (the upstream operator's CRD:
 * the answer to the write lacks it), the record goes to the annotation of
 * capacity/last_drain_record.ts instead, which is never pruned.
 * Called after every pass's status write and by the finalizer; it writes
 * only when the drain has ended and the Hypervisor does not hold its
 * lesson yet, so a failed write is retried by the next pass (finished
 * drains keep looking) or by the finalizer.
 *
 * @module
 */

import type { KubeClient } from "../../framework/client.ts";
import { ApiError, errText } from "../../framework/errors.ts";
import type { Logger } from "../../framework/logger.ts";
import { patchStatus } from "../../framework/status.ts";
import type { EvictionStatus, Hypervisor } from "../../models/mod.ts";
import { HypervisorKind } from "../kinds.ts";
import {
  lastDrainAnnotation,
  lastDrainOf,
} from "../../capacity/last_drain_record.ts";
import { drainLesson, type DrainMarks, needsRecording } from "./lesson.ts";

/** What {@linkcode keepLesson} needs. */
export interface KeepLessonInput {
  /** The API client. */
  client: KubeClient;
  /** The Eviction's name. */
  eviction: string;
  /** The drained host (its Hypervisor's name). */
  host: string;
  /** The Eviction's status as last written. */
  status: EvictionStatus;
  /** The drain's marks (memory.ts). */
  marks: DrainMarks;
  /** The Hypervisor as cached, undefined when there is none. */
  hypervisor: Hypervisor | undefined;
  /** Logs the outcome. */
  log: Logger;
}

/**
 * Writes the drain's lesson to its Hypervisor when it ended and is not
 * recorded yet. Never throws: a failed write is logged and tried again.
 * Returns whether it wrote.
 *
 * @example
 * ```ts ignore
 * await keepLesson({ client, eviction: "node042", host: "node042", status, marks, hypervisor, log });
 * ```
 */
export async function keepLesson(input: KeepLessonInput): Promise<boolean> {
  const { client, eviction, host, status, marks, hypervisor, log } = input;
  if (hypervisor === undefined) return false;
  const lesson = drainLesson(eviction, status, marks);
  if (
    lesson === undefined ||
    !needsRecording(lesson, lastDrainOf(hypervisor))
  ) {
    return false;
  }
  try {
    const written = await patchStatus<Hypervisor>(
      client,
      HypervisorKind,
      host,
      { lastDrain: lesson },
    );
    if (written.status?.lastDrain === undefined) {
      await client.patch(HypervisorKind, host, {
        metadata: { annotations: lastDrainAnnotation(lesson) },
      });
      log.info(
        { lastDrain: lesson },
        "the Hypervisor CRD prunes status.lastDrain: what the drain learned is kept in its annotation evictor.kvm.cloud.sap/last-drain",
      );
      return true;
    }
    log.info(
      { lastDrain: lesson },
      "what the drain learned is kept in its Hypervisor's status.lastDrain",
    );
    return true;
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return false;
    log.warn(
      { err: errText(err) },
      "keeping what the drain learned in the Hypervisor's status failed; the next pass tries again",
    );
    return false;
  }
}
