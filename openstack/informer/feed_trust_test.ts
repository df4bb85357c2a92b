import assert from "node:assert/strict";
import fc from "fast-check";
import { FeedTrust, type TrustOptions, trustOptionsFor } from "./feed_trust.ts";

const OPTIONS: TrustOptions = {
  probeMs: 10,
  hostDemotionMs: 100,
  liveMs: 30,
  feedAfter: 3,
  feedWindowMs: 1000,
  feedBackoffMs: 500,
  feedBackoffMaxMs: 1500,
  pollMs: 20,
};

/** A trust whose host "ev" is proven by a start heard of at `atMs`. */
function proven(key = "ev", atMs = 0): FeedTrust {
  const trust = new FeedTrust(OPTIONS);
  trust.probe(key, "p", atMs, atMs);
  trust.heard(key, "p", atMs + 1);
  return trust;
}

Deno.test("FeedTrust: a host is trusted only once a start of ours on it was heard of", () => {
  const trust = new FeedTrust(OPTIONS);
  assert.equal(trust.trusted("ev", 0), false, "nothing proven yet");
  trust.heard("ev", "vm", 5); // an event before the probe is registered
  trust.probe("ev", "vm", 3, 4);
  assert.equal(trust.trusted("ev", 6), true);
  assert.deepEqual(trust.takeDemotions("ev"), []);
});

Deno.test("FeedTrust: a start not heard of within the bound demotes the host (deaf), for the demotion period and until a start is heard again", () => {
  const trust = proven();
  trust.probe("ev", "vm", 10, 12);
  assert.equal(trust.trusted("ev", 22), true, "within 10 ms of the answer");
  assert.equal(trust.trusted("ev", 23), false, "overdue: deaf");
  const [d] = trust.takeDemotions("ev");
  assert.equal(d?.scope, "host");
  assert.equal(d?.reason, "deaf");
  assert.equal(d?.untilMs, 123);
  assert.equal(trust.trusted("ev", 200), false, "not proven again yet");
  trust.probe("ev", "vm2", 210, 210);
  trust.heard("ev", "vm2", 211);
  assert.equal(trust.trusted("ev", 212), true);
});

Deno.test("FeedTrust: a relist that disagrees demotes at once; trust returns after the period once a relist agrees", () => {
  const trust = proven();
  trust.relisted("ev", false, "1 VM differing", 50);
  assert.equal(trust.trusted("ev", 51), false);
  assert.equal(trust.takeDemotions("ev")[0]?.reason, "wrong");
  trust.probe("ev", "q", 60, 60);
  trust.heard("ev", "q", 61);
  assert.equal(trust.trusted("ev", 160), false, "the last relist disagreed");
  trust.relisted("ev", true, "", 170);
  assert.equal(trust.trusted("ev", 171), true);
});

Deno.test("FeedTrust: a 409 to a start planned while trusted demotes the host once per start", () => {
  const trust = proven();
  trust.refusedStart("ev", "vm", 5, "409 task_state migrating", 6);
  trust.refusedStart("ev", "vm", 5, "409 task_state migrating", 7);
  const demotions = trust.takeDemotions("ev");
  assert.equal(demotions.length, 1);
  assert.equal(demotions[0]?.reason, "wrong");
  const polling = new FeedTrust(OPTIONS);
  polling.refusedStart("ev", "vm", 5, "409", 6);
  assert.deepEqual(
    polling.takeDemotions("ev"),
    [],
    "not trusted: no plan came from the view",
  );
});

Deno.test("FeedTrust: repeated host demotions demote the whole feed, with a backoff that doubles up to its cap", () => {
  const trust = new FeedTrust(OPTIONS);
  const demoteAll = (t0: number) => {
    for (const key of ["a", "b", "c"]) {
      trust.probe(key, "p", t0, t0);
      trust.heard(key, "p", t0);
      trust.relisted(key, false, "wrong", t0 + 1);
    }
  };
  demoteAll(0);
  assert.ok(trust.feedDemoted(2));
  assert.ok(!trust.feedDemoted(501));
  assert.ok(trust.takeDemotions("a").some((d) => d.scope === "feed"));
  assert.ok(trust.takeDemotions("b").some((d) => d.scope === "feed"));
  demoteAll(600); // again soon after: twice as long
  assert.ok(trust.feedDemoted(1500));
  assert.ok(!trust.feedDemoted(1602));
  demoteAll(1700); // capped at 1500
  assert.ok(trust.feedDemoted(3100));
  assert.ok(!trust.feedDemoted(3202));
  const fresh = proven("d", 3300);
  assert.ok(fresh.trusted("d", 3302));
});

Deno.test("FeedTrust: live only while the feed speaks", () => {
  const trust = proven();
  trust.delivered(1);
  assert.ok(trust.trusted("ev", 30) && trust.live(30));
  assert.ok(!trust.live(32), "silent for longer than liveMs");
});

Deno.test("FeedTrust: bad bounds are refused with the name and value", () => {
  assert.throws(
    () => new FeedTrust({ ...OPTIONS, probeMs: 0 }),
    /trust option probeMs must be a number > 0, got 0/,
  );
  assert.equal(
    trustOptionsFor({ pollMs: 8000, relistMs: 60_000, rate: 5 }).probeMs,
    80_000,
  );
});

Deno.test("property: a host with an overdue start is never trusted, whatever else happened", () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.record({
          what: fc.constantFrom(
            "probe",
            "heard",
            "relist_ok",
            "relist_bad",
            "refused",
          ),
          vm: fc.constantFrom("a", "b", "c"),
          dt: fc.integer({ min: 0, max: 60 }),
        }),
        { maxLength: 30 },
      ),
      (steps) => {
        const trust = new FeedTrust(OPTIONS);
        let now = 0;
        const probes = new Map<string, number>();
        const heard = new Map<string, number>();
        for (const s of steps) {
          now += s.dt;
          if (s.what === "probe") {
            trust.probe("ev", s.vm, now, now);
            if ((heard.get(s.vm) ?? -1) < now) probes.set(s.vm, now);
          } else if (s.what === "heard") {
            trust.heard("ev", s.vm, now);
            heard.set(s.vm, now);
            probes.delete(s.vm);
          } else if (s.what === "relist_ok") {
            trust.relisted("ev", true, "", now);
          } else if (s.what === "relist_bad") {
            trust.relisted("ev", false, "x", now);
          } else trust.refusedStart("ev", s.vm, now, "409", now);
          const overdue = [...probes.values()].some((t) =>
            now > t + OPTIONS.probeMs
          );
          const trusted = trust.trusted("ev", now);
          if (overdue) {
            assert.equal(trusted, false);
            for (const [vm, t] of probes) {
              if (now > t + OPTIONS.probeMs) probes.delete(vm);
            }
          }
        }
      },
    ),
  );
});

Deno.test("FeedTrust: a demotion is told once as it happens, and shown until the host is trusted again", () => {
  const told: string[] = [];
  const trust = new FeedTrust(
    OPTIONS,
    (d) => told.push(`${d.scope}/${d.reason}`),
  );
  trust.probe("ev", "p", 0, 0);
  trust.heard("ev", "p", 1);
  assert.equal(trust.demotion("ev", 2), undefined, "trusted");
  trust.probe("ev", "vm", 10, 10);
  const d = trust.demotion("ev", 21);
  assert.equal(d?.reason, "deaf");
  assert.deepEqual(trust.demotedHosts(21), { wrong: 0, deaf: 1 });
  assert.deepEqual(told, ["host/deaf"]);
  // past the demotion period, still not proven: still shown demoted
  assert.equal(trust.demotion("ev", 200)?.reason, "deaf");
  assert.equal(trust.takeDemotions("ev").length, 1, "reported once");
  assert.deepEqual(told, ["host/deaf"], "told once");
  trust.probe("ev", "vm2", 210, 210);
  trust.heard("ev", "vm2", 211);
  assert.equal(trust.demotion("ev", 212), undefined, "trusted again");
  assert.deepEqual(trust.demotedHosts(212), { wrong: 0, deaf: 0 });
  // the third host demotion within the window (ev's counts) demotes the
  // feed, told once; a host demoted after it is told as a host's
  for (const key of ["a", "b", "c"]) trust.relisted(key, false, "1 VM", 300);
  assert.deepEqual(told, [
    "host/deaf",
    "host/wrong",
    "host/wrong",
    "feed/wrong",
    "host/wrong",
  ]);
  assert.equal(trust.demotion("ev", 301)?.scope, "feed");
});

Deno.test("trustOptionsFor: the bounds of a drain's poll and relist intervals, on its clock", () => {
  const cases: Array<
    [
      string,
      { pollMs: number; relistMs: number; rate: number },
      Partial<
        Record<string, number>
      >,
    ]
  > = [
    ["defaults: 2 s polls, 60 s relists", {
      pollMs: 2000,
      relistMs: 60_000,
      rate: 1,
    }, {
      probeMs: 10_000,
      hostDemotionMs: 60_000,
      liveMs: 6000,
      feedAfter: 3,
      feedWindowMs: 300_000,
      feedBackoffMs: 300_000,
      feedBackoffMaxMs: 3_600_000,
      pollMs: 2000,
    }],
    ["slow polls: a start's event within two of them", {
      pollMs: 8000,
      relistMs: 600_000,
      rate: 1,
    }, {
      probeMs: 16_000,
      feedBackoffMs: 3_000_000,
      feedBackoffMaxMs: 3_600_000,
    }],
    ["a clock 10 times real time: every bound scaled", {
      pollMs: 2000,
      relistMs: 60_000,
      rate: 10,
    }, {
      probeMs: 100_000,
      hostDemotionMs: 600_000,
      pollMs: 20_000,
      feedBackoffMaxMs: 36_000_000,
    }],
  ];
  for (const [what, input, want] of cases) {
    const got = trustOptionsFor(input) as unknown as Record<string, number>;
    for (const [k, v] of Object.entries(want)) {
      assert.equal(got[k], v, `${what}: ${k}`);
    }
    assert.doesNotThrow(() => new FeedTrust(trustOptionsFor(input)), what);
  }
});

Deno.test("FeedTrust: an event older than the start proves nothing; the deadline runs from the later of issue and answer", () => {
  const trust = new FeedTrust(OPTIONS);
  trust.heard("ev", "vm", 4); // before the start: about something else
  trust.probe("ev", "vm", 5, 20);
  assert.equal(trust.trusted("ev", 6), false, "not proven by the old event");
  trust.heard("ev", "vm", 3); // late delivery of an older event
  assert.equal(trust.trusted("ev", 30), false, "still awaited, not proven");
  assert.deepEqual(trust.takeDemotions("ev"), [], "answered at 20: due by 30");
  assert.equal(trust.trusted("ev", 31), false);
  assert.equal(trust.takeDemotions("ev")[0]?.reason, "deaf");
});

Deno.test("FeedTrust: probing the same start again keeps its deadline; a new start of the VM replaces it", () => {
  const trust = proven();
  trust.probe("ev", "vm", 10, 10);
  trust.probe("ev", "vm", 10, 15); // the same start, told again
  assert.equal(trust.trusted("ev", 21), false, "due by 20, not 25");
  const again = proven();
  again.probe("ev", "vm", 10, 10);
  again.probe("ev", "vm", 18, 18); // a second start of the VM
  assert.equal(again.trusted("ev", 25), true, "the new start: due by 28");
  assert.equal(again.trusted("ev", 29), false);
});

Deno.test("FeedTrust: after a gap the pending starts are dropped, never found deaf", () => {
  const trust = proven();
  trust.probe("ev", "vm", 10, 10);
  trust.dropProbes("ev");
  assert.equal(trust.trusted("ev", 100), true);
  assert.deepEqual(trust.takeDemotions("ev"), []);
  trust.dropProbes("never-seen"); // no host: nothing to drop, no throw
  assert.deepEqual(trust.takeDemotions("never-seen"), []);
});

Deno.test("FeedTrust: a forgotten host starts over unproven, its demotions gone", () => {
  const trust = proven();
  trust.relisted("ev", false, "1 VM differing", 5);
  trust.forget("ev");
  assert.deepEqual(trust.takeDemotions("ev"), []);
  assert.equal(trust.demotion("ev", 6), undefined, "no demotion of its own");
  assert.equal(trust.trusted("ev", 6), false, "not proven either");
  trust.probe("ev", "q", 7, 7);
  trust.heard("ev", "q", 8);
  assert.equal(trust.trusted("ev", 9), true, "no demotion period left");
});

Deno.test("FeedTrust: a demoted host that disagrees again stays demoted longer but counts once", () => {
  const told: string[] = [];
  const trust = new FeedTrust(OPTIONS, (d) => told.push(d.detail));
  for (const t of [0, 10, 20]) {
    trust.probe("ev", `p${t}`, t, t);
    trust.heard("ev", `p${t}`, t);
    trust.relisted("ev", false, `at ${t}`, t + 1);
  }
  assert.deepEqual(told, ["ev: at 0"], "one demotion, the feed untouched");
  assert.equal(trust.feedDemoted(22), false);
  const [d, ...rest] = trust.takeDemotions("ev");
  assert.equal(rest.length, 0);
  assert.equal(d?.untilMs, 101, "the first one's period as told");
  trust.relisted("ev", true, "", 115);
  trust.probe("ev", "q", 115, 115);
  trust.heard("ev", "q", 116);
  assert.equal(trust.trusted("ev", 117), false, "extended to 121");
  assert.equal(trust.trusted("ev", 121), true);
});

Deno.test("FeedTrust: host demotions spread wider than the window never demote the feed", () => {
  const trust = new FeedTrust(OPTIONS);
  for (const [key, t] of [["a", 0], ["b", 600], ["c", 1200], ["d", 1800]]) {
    trust.relisted(key as string, false, "x", t as number);
  }
  assert.equal(trust.feedDemoted(1801), false, "at most two in any 1000 ms");
  trust.relisted("e", false, "x", 1900);
  assert.equal(trust.feedDemoted(1901), true, "c, d, e within the window");
});

Deno.test("FeedTrust: a feed that behaved a whole window after its demotion starts its backoff over", () => {
  const trust = new FeedTrust(OPTIONS);
  const demoteAll = (t: number) => {
    for (const key of ["a", "b", "c"]) trust.relisted(key, false, "x", t);
  };
  demoteAll(0); // 500
  demoteAll(600); // again soon: 1000, until 1600
  assert.ok(trust.feedDemoted(1599));
  demoteAll(2700); // 1100 after it ended: more than the window
  assert.ok(trust.feedDemoted(3199));
  assert.ok(!trust.feedDemoted(3200), "back to 500");
});

Deno.test("FeedTrust: a feed demotion distrusts every host, is reported to those known then, and names its cause", () => {
  const trust = proven("ev");
  for (const key of ["a", "b", "c"]) trust.relisted(key, false, "1 VM", 10);
  assert.equal(trust.trusted("ev", 11), false, "a proven host, distrusted");
  const feed = trust.takeDemotions("ev").find((d) => d.scope === "feed");
  assert.equal(
    feed?.detail,
    "3 host views demoted within 1 s (last: 1 VM): every drain polls for 1 s",
  );
  assert.equal(feed?.untilMs, 510);
  assert.deepEqual(trust.takeDemotions("ev"), [], "reported once");
  trust.probe("late", "p", 20, 20);
  assert.deepEqual(trust.takeDemotions("late"), [], "came after it");
  assert.equal(trust.demotion("late", 21)?.scope, "feed", "yet shown");
  assert.equal(trust.trusted("ev", 510), true, "ev's own trust is intact");
});

Deno.test("FeedTrust: a 409 on each start of a VM counts, one per start", () => {
  const trust = proven();
  trust.refusedStart("ev", "vm", 5, "409 a", 6);
  trust.probe("ev", "q", 200, 200);
  trust.heard("ev", "q", 201);
  trust.refusedStart("ev", "vm", 202, "409 b", 203);
  assert.deepEqual(
    trust.takeDemotions("ev").map((d) => d.detail),
    ["ev: 409 a", "ev: 409 b"],
  );
});

Deno.test("FeedTrust: every bound must be finite and above zero", () => {
  for (const bad of [-1, Number.NaN, Infinity]) {
    assert.throws(
      () => new FeedTrust({ ...OPTIONS, feedWindowMs: bad }),
      new RegExp(`trust option feedWindowMs must be a number > 0, got ${bad}`),
    );
  }
});

Deno.test("property: trustOptionsFor scales every bound but the count with the rate", () => {
  fc.assert(fc.property(
    fc.integer({ min: 1, max: 60_000 }),
    fc.integer({ min: 1, max: 3_600_000 }),
    fc.integer({ min: 1, max: 100 }),
    (pollMs, relistMs, rate) => {
      const one = trustOptionsFor({ pollMs, relistMs, rate: 1 });
      const got = trustOptionsFor({ pollMs, relistMs, rate });
      for (const k of Object.keys(one) as Array<keyof TrustOptions>) {
        const want = k === "feedAfter" ? one[k] : one[k] * rate;
        assert.equal(got[k], want, k);
      }
      assert.ok(one.feedBackoffMaxMs >= one.feedBackoffMs);
      assert.ok(one.probeMs >= 10_000 && one.probeMs >= 2 * pollMs);
    },
  ));
});
