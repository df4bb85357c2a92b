/**
 * A {@linkcode Pipe} that records what a connection does to it, for the
 * HTTP/1.1 and HTTP/2 connection tests.
 *
 * @module
 */

import type { Pipe } from "../../framework/http_exchange.ts";

const decoder = new TextDecoder();

/** Records writes, ends, destroys, pauses and resumes. */
export class FakePipe implements Pipe {
  /** Every write, copied. */
  readonly writes: Uint8Array[] = [];
  /** What `buffered` reports (set it to play a client that reads nothing). */
  buffered = 0;
  ended = false;
  destroyed = false;
  /** Paused now. */
  paused = false;
  pauses = 0;
  resumes = 0;
  /** Writes after end() or destroy(): a connection must make none. */
  lateWrites = 0;

  write(bytes: Uint8Array): boolean {
    if (this.ended || this.destroyed) this.lateWrites++;
    this.writes.push(bytes.slice());
    return true;
  }
  end(): void {
    this.ended = true;
  }
  destroy(): void {
    this.destroyed = true;
  }
  pause(): void {
    this.paused = true;
    this.pauses++;
  }
  resume(): void {
    this.paused = false;
    this.resumes++;
  }
  /** Neither ended nor destroyed. */
  get open(): boolean {
    return !this.ended && !this.destroyed;
  }
  /** Everything written, as UTF-8 text. */
  text(): string {
    return this.writes.map((b) => decoder.decode(b)).join("");
  }
}
