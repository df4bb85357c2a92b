import assert from "node:assert/strict";
import { FeedListeners } from "./feed_listeners.ts";
import type { NovaNotification } from "./notification_types.ts";

const note = { eventType: "instance.update" } as NovaNotification;

Deno.test("FeedListeners: a failing listener is reported and the others still called", () => {
  const errors: string[] = [];
  const listeners = new FeedListeners((kind, e) =>
    errors.push(`${kind}: ${(e as Error).message}`)
  );
  const got: string[] = [];
  listeners.listen(() => {
    throw new Error("boom");
  });
  listeners.listen((n) => got.push(n.eventType));
  listeners.onState(() => {
    throw new Error("bang");
  });
  listeners.onState((state, epoch) => got.push(`${state}@${epoch}`));
  listeners.deliver(note);
  listeners.stateChanged("up", 2);
  assert.deepEqual(got, ["instance.update", "up@2"]);
  assert.deepEqual(errors, ["listener: boom", "state listener: bang"]);
});

Deno.test("FeedListeners: without a handler a listener's error reaches the deliverer; removed and cleared listeners are not called", () => {
  const listeners = new FeedListeners();
  const got: string[] = [];
  const stop = listeners.listen((n) => got.push(n.eventType));
  listeners.deliver(note);
  stop();
  listeners.deliver(note);
  assert.deepEqual(got, ["instance.update"]);
  listeners.onState((state) => got.push(state));
  listeners.clear();
  listeners.stateChanged("down", 1);
  assert.deepEqual(got, ["instance.update"]);
  listeners.listen(() => {
    throw new Error("boom");
  });
  assert.throws(() => listeners.deliver(note), /boom/);
});
