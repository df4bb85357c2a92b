/**
 * The forget handler's contract (handler.ts ForgetHandler): called once
 * when an object a worker saw is gone, after its finalizer; never on an
 * update; a re-created object is forgotten again when it goes.
 */
import assert from "node:assert/strict";
import { Controller } from "./controller.ts";
import type { KubeClient } from "./client.ts";
import type { InformerEvent } from "./informer.ts";
import type { KubeObject } from "./kind.ts";
import { silentLogger } from "./logger.ts";
import { FrameworkMetrics } from "./metrics.ts";
import { Things } from "../tests/harness/things.ts";

const FINALIZER = "fwtest.example.com/f";

/** A controller over a cache the test edits; it records the calls. */
function setUp() {
  const objects = new Map<string, KubeObject>();
  const calls: string[] = [];
  // The finalizer's removal: the server answers with the object without it.
  const client = {
    patch: (_k: unknown, key: string, body: KubeObject) => {
      const obj = objects.get(key)!;
      const meta = { ...obj.metadata, ...body.metadata, resourceVersion: "9" };
      return Promise.resolve({ ...obj, metadata: meta });
    },
  } as unknown as KubeClient;
  const cache = {
    get: (key: string) => objects.get(key),
    list: () => [...objects.values()],
    hasSynced: true,
  };
  const ctl = new Controller<KubeObject>({
    kind: Things,
    cache,
    client: () => client,
    logger: silentLogger(),
    metrics: new FrameworkMetrics({ processMetrics: false }),
    events: () => ({ record: () => Promise.resolve() }) as never,
    cacheOf: () => cache as never,
    enqueue: () => {},
    finalizer: FINALIZER,
  });
  ctl.reconcileHandler = (ctx) => {
    calls.push(`reconcile ${ctx.object === undefined ? "gone" : "seen"}`);
  };
  ctl.configure({ forget: (key) => calls.push(`forget ${key}`) });
  const settle = async () => {
    for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 0));
  };
  const event = async (ev: InformerEvent<KubeObject>) => {
    ctl.onEvent(ev);
    await settle();
  };
  ctl.start();
  return { objects, calls, ctl, event };
}

const thing = (rv: string, meta: KubeObject["metadata"] = {}): KubeObject => ({
  metadata: { name: "a", resourceVersion: rv, ...meta },
});

Deno.test("controller forget: a deletion forgets once, an update never", async () => {
  const { objects, calls, ctl, event } = setUp();
  objects.set("a", thing("1"));
  await event({ type: "added", key: "a", object: thing("1") });
  objects.set("a", thing("2"));
  await event({ type: "modified", key: "a", object: thing("2") });
  assert.deepEqual(calls, ["reconcile seen", "reconcile seen"]);
  objects.delete("a");
  await event({ type: "deleted", key: "a", object: thing("2") });
  // a second look at the gone key (a relist, a related watch) forgets nothing
  await event({ type: "deleted", key: "a", object: thing("2") });
  assert.deepEqual(calls.slice(2), [
    "reconcile gone",
    "forget a",
    "reconcile gone",
  ]);
  await ctl.stop(0);
  ctl.shutdown();
});

Deno.test("controller forget: a re-created object starts fresh and is forgotten again", async () => {
  const { objects, calls, ctl, event } = setUp();
  for (const rv of ["1", "5"]) {
    objects.set("a", thing(rv));
    await event({ type: "added", key: "a", object: thing(rv) });
    objects.delete("a");
    await event({ type: "deleted", key: "a", object: thing(rv) });
  }
  assert.equal(calls.filter((c) => c === "forget a").length, 2);
  await ctl.stop(0);
  ctl.shutdown();
});

/** {@linkcode setUp} with a finalize handler, and the object being deleted. */
function setUpFinalizing() {
  const t = setUp();
  t.ctl.finalizeHandler = () => {
    t.calls.push("finalize");
  };
  const deleting = thing("3", {
    finalizers: [FINALIZER],
    deletionTimestamp: "2026-01-01T00:00:00Z",
  });
  return { ...t, deleting };
}

Deno.test("controller forget: a finalized object is forgotten only once it is gone", async () => {
  const { objects, calls, ctl, event, deleting } = setUpFinalizing();
  objects.set("a", thing("1", { finalizers: [FINALIZER] }));
  await event({ type: "added", key: "a", object: objects.get("a")! });
  objects.set("a", deleting);
  await event({ type: "modified", key: "a", object: deleting });
  assert.deepEqual(calls, ["reconcile seen", "finalize"]);
  objects.delete("a");
  await event({ type: "deleted", key: "a", object: deleting });
  assert.deepEqual(calls.slice(2), ["reconcile gone", "forget a"]);
  await ctl.stop(0);
  ctl.shutdown();
});

Deno.test("controller forget: an object first seen deleting (after a restart) is forgotten once gone", async () => {
  const { objects, calls, ctl, event, deleting } = setUpFinalizing();
  objects.set("a", deleting);
  await event({ type: "added", key: "a", object: deleting });
  objects.delete("a");
  await event({ type: "deleted", key: "a", object: deleting });
  assert.deepEqual(calls, ["finalize", "reconcile gone", "forget a"]);
  await ctl.stop(0);
  ctl.shutdown();
});
