/**
 * What the informer knows of one live copy's progress (progress.ts).
 * @module
 */

/** One copy's progress as last read; times on the controller's clock. */
export interface CopyProgress {
  readonly serverId: string;
  readonly migrationId: string;
  /** `memory_total_bytes`. */
  readonly totalBytes: number;
  /** `memory_remaining_bytes`. */
  readonly remainingBytes: number;
  readonly readAtMs: number;
  /** The lowest remaining bytes read so far, and when it was first read. */
  readonly lowestRemainingBytes: number;
  readonly lowestAtMs: number;
  /** Net fall of the remaining bytes per second over the reads, when two differ. */
  readonly bytesPerSecond?: number;
  /** Seconds to the end at that rate, when the rate is above 0. */
  readonly etaSeconds?: number;
}
