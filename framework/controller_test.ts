/**
 * The controller's retry decisions, with a manual clock and handlers that
 * fail on purpose (no API server needed: nothing is written).
 */
import assert from "node:assert/strict";
import { ManualClock } from "./clock.ts";
import { Controller } from "./controller.ts";
import { ApiError, TemporaryError } from "./errors.ts";
import type { ReconcileResult } from "./handler.ts";
import type { CacheReader } from "./informer.ts";
import type { KubeObject } from "./kind.ts";
import { createLogger, type Logger, silentLogger } from "./logger.ts";
import { passesOf } from "../tests/harness/pass_log.ts";
import { Things } from "../tests/harness/things.ts";
import { FrameworkMetrics } from "./metrics.ts";

const refused = () =>
  new TypeError(
    "error sending request for url (https://127.0.0.1:6443/x): client error (Connect): tcp connect error: Connection refused (os error 111)",
  );

/**
 * Runs a controller whose handler answers with `outcomes[i]` on pass i
 * (a result, or an error to throw); returns the clock times of the passes.
 */
async function passTimes(
  outcomes: Array<ReconcileResult | Error>,
  untilMs: number,
  logger: Logger = silentLogger(),
): Promise<number[]> {
  const clock = new ManualClock(0);
  const obj: KubeObject = { metadata: { name: "a", resourceVersion: "1" } };
  const cache: CacheReader<KubeObject> = {
    get: (key) => key === "a" ? obj : undefined,
    list: () => [obj],
    hasSynced: true,
  };
  const ctl = new Controller<KubeObject>({
    kind: Things,
    cache,
    client: () => {
      throw new Error("no client in this test");
    },
    logger,
    metrics: new FrameworkMetrics({ processMetrics: false }),
    // Warning Events of failed passes go nowhere here
    events: () => ({ record: () => Promise.resolve() }) as never,
    cacheOf: () => cache as never,
    enqueue: () => {},
    finalizer: "fwtest.example.com/f",
    clock,
  });
  const times: number[] = [];
  ctl.reconcileHandler = () => {
    const o = outcomes[times.length];
    times.push(clock.now());
    if (o instanceof Error) throw o;
    return o;
  };
  ctl.start();
  const settle = () => new Promise((r) => setTimeout(r, 0));
  ctl.enqueue("a");
  await settle();
  for (let t = 0; t < untilMs; t += 50) {
    clock.advance(50);
    await settle();
  }
  await ctl.stop(0);
  ctl.shutdown();
  return times;
}

const gaps = (times: number[]) => times.slice(1).map((t, i) => t - times[i]!);

Deno.test("controller: each pass is one debug line with its key and the wait it asked for", async () => {
  const lines: string[] = [];
  const logger = createLogger({
    level: "debug",
    destination: { write: (l) => lines.push(l) },
  });
  const times = await passTimes(
    [{ requeueAfterMs: 700 }, { requeueAfterMs: 300 }, {}],
    2_000,
    logger,
  );
  assert.deepEqual(times, [0, 700, 1000]);
  const passes = passesOf(lines.join(""), "a");
  assert.deepEqual(passes.map((p) => p.requeueAfterMs), [700, 300, undefined]);
});

Deno.test("controller: an unavailable API server is retried at 200 ms doubling to a 2 s cap", async () => {
  const times = await passTimes(
    Array.from({ length: 8 }, refused),
    12_000,
  );
  // eight failures, then a success that asks for no requeue
  assert.deepEqual(gaps(times), [200, 400, 800, 1600, 2000, 2000, 2000, 2000]);
});

Deno.test("controller: 503 and 429 from the API server are outages too", async () => {
  const api = (s: number) => new ApiError("PUT", "/x", s, "R", "m");
  const times = await passTimes([api(503), api(429), api(500)], 2_000);
  assert.deepEqual(gaps(times), [200, 400, 800]);
});

Deno.test("controller: an outage keeps the handler's own pace when that is slower", async () => {
  const times = await passTimes(
    [{ requeueAfterMs: 3_000 }, refused(), refused(), {
      requeueAfterMs: 3_000,
    }],
    20_000,
  );
  // requeue 3 s, then two outage retries at the handler's 3 s pace (not
  // 200/400 ms), then the handler's own requeue again
  assert.deepEqual(gaps(times).slice(0, 3), [3_000, 3_000, 3_000]);
});

Deno.test("controller: other errors keep the long exponential backoff, beyond the outage cap", async () => {
  const times = await passTimes(
    Array.from({ length: 13 }, () => new Error("a bug")),
    30_000,
  );
  const g = gaps(times);
  // 5 ms doubling (seen on the test's 50 ms tick): the 11th retry waits 5.12 s
  assert.ok(g.every((x, i) => i === 0 || x >= g[i - 1]!), `${g}`);
  assert.ok(g.some((x) => x >= 5_000), `${g}`);
});

Deno.test("controller: a TemporaryError's own delay wins over the outage backoff", async () => {
  const times = await passTimes(
    [
      new TemporaryError("nova down", { delayMs: 1_000, cause: refused() }),
      refused(),
    ],
    3_000,
  );
  assert.deepEqual(gaps(times), [1_000, 200]);
});
