import assert from "node:assert/strict";
import fc from "fast-check";
import { WrittenObjects } from "./written.ts";

Deno.test("written objects: preferred while the cache shows an older version", () => {
  const w = new WrittenObjects<string, string>();
  assert.equal(w.resolve("k", "1"), undefined, "nothing remembered");
  w.remember("k", "raw2", "p2", "2", ["1", undefined, ""]);
  assert.equal(w.resolve("k", "1")?.parsed, "p2", "cache still at 1");
  assert.equal(w.resolve("k", "1")?.raw, "raw2");
  assert.equal(w.resolve("other", "1"), undefined, "per key");
  assert.equal(w.resolve("k", "2"), undefined, "cache caught up");
  assert.equal(w.size, 0, "forgotten once caught up");
  assert.equal(w.resolve("k", "1"), undefined, "stays forgotten");
});

Deno.test("written objects: a cache version never seen is newer: the cache wins", () => {
  const w = new WrittenObjects<string, string>();
  w.remember("k", "r", "p", "5", ["4"]);
  assert.equal(w.resolve("k", "7"), undefined);
  assert.equal(w.size, 0);
});

Deno.test("written objects: an object gone from the cache is forgotten", () => {
  const w = new WrittenObjects<string, string>();
  w.remember("k", "r", "p", "5", ["4"]);
  assert.equal(w.resolve("k", undefined), undefined);
  assert.equal(w.size, 0);
  w.remember("k", "r", "p", "5", ["4"]);
  w.forget("k");
  assert.equal(w.resolve("k", "4"), undefined);
});

Deno.test("written objects: consecutive writes keep the newest and all older versions", () => {
  const w = new WrittenObjects<string, string>();
  w.remember("k", "r2", "p2", "2", ["1"]);
  w.remember("k", "r3", "p3", "3", ["2"]);
  assert.equal(w.resolve("k", "1")?.parsed, "p3");
  assert.equal(w.resolve("k", "2")?.parsed, "p3");
  assert.equal(w.resolve("k", "3"), undefined);
});

Deno.test("written objects: a written object needs a version", () => {
  const w = new WrittenObjects<string, string>();
  assert.throws(() => w.remember("k", "r", "p", "", []), /resourceVersion/);
});

Deno.test("written objects: a pass never sees an object older than the last write", () => {
  // The server's history of one object is versions 1..n in order; the
  // cache follows it with lag. Writes by us happen at arbitrary points
  // (based on the newest version we know). Whatever the lag, what a pass
  // sees is never older than our last write.
  fc.assert(
    fc.property(
      fc.array(
        fc.oneof(
          fc.constant("ourWrite" as const),
          fc.constant("otherWrite" as const),
          fc.constant("cacheStep" as const),
          fc.constant("pass" as const),
        ),
        { maxLength: 60 },
      ),
      (steps) => {
        const w = new WrittenObjects<number, number>();
        let server = 1; // newest version on the server
        let cache = 1; // version the cache shows
        let lastOurs = 0; // version of our last write
        const seen = () => w.resolve("k", String(cache))?.parsed ?? cache;
        for (const step of steps) {
          if (step === "ourWrite") {
            const base = seen();
            if (base !== server) continue; // would be a 409: re-read first
            server++;
            w.remember("k", server, server, String(server), [
              String(base),
              String(cache),
            ]);
            lastOurs = server;
          } else if (step === "otherWrite") {
            server++;
          } else if (step === "cacheStep") {
            if (cache < server) cache++;
          } else {
            assert.ok(
              seen() >= lastOurs,
              `saw ${seen()} after writing ${lastOurs}`,
            );
          }
        }
      },
    ),
  );
});

Deno.test("written objects: peek answers like resolve for another cache's copy, and forgets nothing", () => {
  const w = new WrittenObjects<string, string>();
  w.remember("a", "raw", "parsed", "5", ["3"]);
  // another cache still behind: the write
  assert.equal(w.peek("a", "3")?.parsed, "parsed");
  // another cache at or past the write: its copy; the memory stays for
  // the controller's own cache, which may still lag
  assert.equal(w.peek("a", "5"), undefined);
  assert.equal(w.peek("a", "9"), undefined);
  assert.equal(w.peek("a", undefined), undefined);
  assert.equal(w.resolve("a", "3")?.parsed, "parsed");
  assert.equal(w.peek("b", "1"), undefined);
});
