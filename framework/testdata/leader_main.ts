/**
 * A minimal operator process for the leader election test: prints
 * "LEADING <identity>" when it becomes the leader. Config from env:
 * KUBECONFIG_PATH, LEASE_NAME, LEASE_NAMESPACE, IDENTITY.
 *
 * @module
 */
import { KubeConfig } from "@kubernetes/client-node";
import { silentLogger } from "../logger.ts";
import { Operator } from "../operator.ts";

const env = (name: string): string => {
  const v = Deno.env.get(name);
  if (v === undefined) {
    throw new TypeError(`environment variable ${name} is not set`);
  }
  return v;
};
const kc = new KubeConfig();
kc.loadFromFile(env("KUBECONFIG_PATH"));
const identity = env("IDENTITY");
const op = new Operator({
  name: "fwtest-leader",
  kubeConfig: kc,
  healthAddress: false,
  processMetrics: false,
  logger: silentLogger(),
  leaderElection: {
    leaseName: env("LEASE_NAME"),
    leaseNamespace: env("LEASE_NAMESPACE"),
    identity,
    leaseDurationMs: 3000,
    renewDeadlineMs: 2000,
    retryPeriodMs: 500,
  },
});
op.onStartup(() => console.log(`STARTED ${identity}`));
await op.start();
const timer = setInterval(() => {
  if (op.isLeader) {
    console.log(`LEADING ${identity}`);
    clearInterval(timer);
  }
}, 50);
await op.done;
