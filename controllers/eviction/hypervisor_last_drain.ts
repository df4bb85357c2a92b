/**
 * Keeps what an ended drain learned in its Hypervisor's `status.lastDrain`, or in an annotation
 * where the installed (upstream) CRD prunes it; a failed write is retried by the next pass.
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
import {
  drainLesson,
  type DrainMarks,
  needsRecording,
} from "./drain_lesson.ts";

/** What {@linkcode keepLesson} needs. */
export interface KeepLessonInput {
  client: KubeClient;
  eviction: string;
  host: string;
  /** As last written. */
  status: EvictionStatus;
  marks: DrainMarks;
  /** As cached. */
  hypervisor: Hypervisor | undefined;
  log: Logger;
}

/**
 * Writes the drain's lesson when it ended and is not recorded yet; never throws. Whether it wrote.
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
    lesson === undefined || !needsRecording(lesson, lastDrainOf(hypervisor))
  ) return false;
  try {
    const written = await patchStatus<Hypervisor>(
      client,
      HypervisorKind,
      host,
      { lastDrain: lesson },
    );
    const pruned = written.status?.lastDrain === undefined;
    if (pruned) {
      await client.patch(HypervisorKind, host, {
        metadata: { annotations: lastDrainAnnotation(lesson) },
      });
    }
    log.info(
      { lastDrain: lesson },
      pruned
        ? "the Hypervisor CRD prunes status.lastDrain: what the drain learned is kept in its annotation evictor.kvm.cloud.sap/last-drain"
        : "what the drain learned is kept in its Hypervisor's status.lastDrain",
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
