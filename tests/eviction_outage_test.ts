/**
 * An API-server outage of 30 s in the middle of a drain, with the real
 * program (`main.ts run --leader-elect`, as deployed, as a process) against
 * a real kube-apiserver that is killed and started again on the same port
 * and etcd. The leader cannot renew its Lease during the outage, so it
 * stops its handlers at the renew deadline; the Lease still names it when
 * the server is back, so it leads again at once. When it is back,
 * the drain's next Nova call must come within its poll interval + 2 s, the
 * watches must recover (a new Eviction starts and finishes), and no VM may
 * have been migrated twice.
 *
 * The running drain moves 128 GB VMs (over two minutes each) with progress
 * reads off (`--migration-progress-interval=0s`) and nothing queued in Nova:
 * no migration finishes during the test and none is timed by its measured
 * ETA, so the drain's own pacing is its poll interval throughout (it looks
 * at the expected end of a migration once it has seen some finish or read
 * its progress, and later on purpose while Nova's queue keeps the host
 * busy) and the delay measured is the outage's alone.
 */
import assert from "node:assert/strict";
import { startTimerLagProbe } from "./harness/timer_lag.ts";
import { KubeClient } from "../framework/client.ts";
import { EvictionKind } from "../controllers/kinds.ts";
import type { Eviction } from "../models/mod.ts";
import { startEnvtest } from "./harness/envtest.ts";
import {
  migratedTwice,
  serversOn,
  uniqueSuffix,
  waitFor,
} from "./harness/eviction_env.ts";
import { startNovaSim } from "./harness/nova_sim/mod.ts";
import {
  operatorLogTail,
  type OperatorProcess,
  startOperatorProcess,
} from "./harness/operator_process.ts";
import {
  createEviction,
  drainFinished,
  drainProcessArgs,
  novaCalls,
  recordNovaCalls,
  registerHypervisor,
} from "./harness/process_drain.ts";
import { apiRequests, requestsBetween } from "./harness/api_requests.ts";

const OUTAGE_MS = 30_000;
const POLL_MS = 1_000;
const RETRY_MS = 1_000;
const VMS = 6;

Deno.test({
  name:
    "eviction: after a 30 s API-server outage mid-drain, Nova is called again within poll interval + 2 s",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const env = await startEnvtest();
    const s = uniqueSuffix();
    const src = `outage-${s}`;
    const late = `late-${s}`;
    const sim = await startNovaSim({
      seed: 12,
      timeScale: 1,
      hosts: [
        // Nova's limit above the drain's: nothing waits in Nova's queue
        // (behind a queue, an untimed copy is looked at later on purpose)
        {
          name: src,
          ramMb: 2_000_000,
          vcpus: 2048,
          maxConcurrentLiveMigrations: 2,
        },
        { name: late, ramMb: 2_000_000, vcpus: 2048 },
        { name: `dst1-${s}`, ramMb: 8_000_000, vcpus: 8192 },
        { name: `dst2-${s}`, ramMb: 8_000_000, vcpus: 8192 },
      ],
      serverGroups: [
        { host: src, count: VMS, namePrefix: "vm", ramMb: [131_072] },
        { host: late, count: 4, namePrefix: "late", ramMb: [4096] },
      ],
    });
    const labels = { "evictor-test": s };
    let client = await KubeClient.fromKubeConfig(env.kubeConfig());
    const accepted = (host: string) =>
      sim.state().migrations.filter((m) => m.source === host).length;
    let op: OperatorProcess | undefined;
    const calls = recordNovaCalls(sim);
    try {
      await registerHypervisor(client, sim, src, labels);
      await registerHypervisor(client, sim, late, labels);
      op = await startOperatorProcess({
        kubeconfigPath: env.kubeconfigPath,
        cloudsYaml: sim.cloudsYaml({ cloud: "outage" }),
        cloud: "outage",
        args: drainProcessArgs(`evictor-test=${s}`, `${POLL_MS}ms`, [
          "--eviction-concurrency=2",
          "--migration-progress-interval=0s",
          "--leader-elect",
          "--leader-election-namespace=default",
          `--leader-election-id=evictor-${s}`,
          "--lease-duration=8s",
          "--renew-deadline=5s",
          `--retry-period=${RETRY_MS}ms`,
        ]),
      });
      const running = op;
      const fail = async (err: unknown): Promise<never> => {
        throw new Error(`${err}\n${await operatorLogTail(running, 60)}`);
      };
      const before = await apiRequests(env, "evictions");
      const novaBefore = novaCalls(sim);
      await createEviction(client, src, labels);
      await waitFor(
        "the first migrations",
        () => accepted(src) >= 2 ? true : undefined,
        60_000,
      ).catch(fail);
      // some idle passes: migrations run, nothing else changes
      await new Promise((r) => setTimeout(r, 4 * POLL_MS));
      const spent = requestsBetween(
        before,
        await apiRequests(env, "evictions"),
      );
      const novaSpent = novaCalls(sim) - novaBefore;

      // The test's own client must not hold a connection while the server
      // dies under it (Deno 2.9 has crashed then): close it first.
      client.close();
      await env.stopApiServer();
      const downAt = Date.now();
      const acceptedAtDown = accepted(src);
      await new Promise((r) => setTimeout(r, OUTAGE_MS));
      await env.startApiServer();
      const backAt = Date.now();
      const lag = startTimerLagProbe();
      client = await KubeClient.fromKubeConfig(env.kubeConfig());

      const first = await waitFor(
        "a Nova call after the API server came back",
        () => calls.firstAfter(backAt),
        POLL_MS + 10_000,
        20,
      ).catch(fail);
      const delay = first - backAt;
      assert.ok(
        serversOn(sim, src).length > 0,
        "the drain finished during the outage: not a mid-drain outage",
      );

      // Watches recovered: an Eviction created now is seen and started.
      const createdAt = Date.now();
      await createEviction(client, late, labels);
      await waitFor(
        "the late Eviction to start",
        () => accepted(late) > 0 ? true : undefined,
        30_000,
        20,
      ).catch(fail);
      const lateStart = Date.now() - createdAt;
      // The machine's timer lateness since the API server came back: on a
      // loaded machine the operator's watch restarts, its poll and its
      // start each come that much later, without a defect (0 on a quiet
      // one: the bounds as they were).
      const lateMs = Math.round(lag.stop());

      await drainFinished(client, late, 120_000).catch(fail);
      const log = await op.log();
      const during = calls.times.filter((t) => t >= downAt && t <= backAt);
      const maxGap = Math.max(
        0,
        ...[downAt, ...during, first].slice(1).map((t, i) =>
          t - [downAt, ...during][i]!
        ),
      );
      console.log(
        `before the outage: ${novaSpent} Nova calls (one or more per pass) cost the API server ${
          JSON.stringify(spent.byVerb)
        } on evictions (the POST is the test's), ${spent.conflicts} conflicts`,
      );
      console.log(
        `API server down ${
          backAt - downAt
        } ms: first Nova call ${delay} ms after it was back (poll ${POLL_MS} ms); ${
          accepted(src) - acceptedAtDown
        } migrations accepted since it went down; ${during.length} Nova calls while it was down (longest gap ${maxGap} ms: the handlers stop at the renew deadline); a new Eviction started ${lateStart} ms after its creation`,
      );
      assert.ok(
        delay <= POLL_MS + 2_000 + 2 * lateMs,
        `first Nova call ${delay} ms after the API server was back, want <= ${
          POLL_MS + 2_000
        } + 2 x ${lateMs} ms timer lateness`,
      );
      assert.ok(
        lateStart <= 10_000 + 4 * lateMs,
        `new Eviction started after ${lateStart} ms, want <= 10000 + 4 x ${lateMs} ms timer lateness`,
      );
      assert.deepEqual(
        log.split("\n").filter((l) =>
          l.includes("retrying with backoff") &&
          /fetch failed|Connection refused|ServiceUnavailable|TooManyRequests/
            .test(l)
        ),
        [],
        "an outage error took the long backoff",
      );
      assert.match(
        log,
        /stopping the handlers, campaigning again/,
        "the outage outlasted the renew deadline",
      );
      assert.equal(
        await Promise.race([op.exited, Promise.resolve("running")]),
        "running",
        "the operator exited",
      );
      assert.equal(spent.byVerb["GET"], undefined, "a pass read the server");
      assert.equal(spent.conflicts, 0, "a status write conflicted");
      assert.ok(
        (spent.byVerb["PUT status"] ?? 0) < novaSpent,
        "a status write per pass",
      );
      assert.deepEqual(migratedTwice(sim, [src, late]), [], "migrated twice");
      assert.deepEqual(serversOn(sim, late), [], "left behind");
      assert.ok(
        (await client.get<Eviction>(EvictionKind, src)).status?.inFlightCount,
        "the status of the running drain is written again",
      );
    } finally {
      calls.stop();
      await op?.stop();
      client.close();
      await sim.close();
      await env.stop();
    }
  },
});
