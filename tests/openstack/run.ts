/**
 * The real-OpenStack lane (`deno task test:openstack`): installs the
 * packages when needed (root and apt-get; hack/openstack/install.sh), starts
 * one API server and one cloud for the whole lane, hands them to the tests
 * (`EVICTOR_ENVTEST`, `EVICTOR_OPENSTACK`), runs the lane's test files one
 * after the other (they share the cloud's hosts), and stops everything
 * however the run ends. Extra arguments go to `deno test`.
 *
 * @module
 */
import {
  describeEnvtest,
  SHARED_ENV,
  startEnvtest,
} from "../harness/envtest.ts";
import {
  describeOpenStack,
  openStackAvailable,
  SHARED_OPENSTACK_ENV,
  startOpenStack,
} from "../harness/openstack.ts";
import { LANE_CLOUD } from "./contract_backends.ts";
import { plainOutputForChildren } from "../harness/plain_output.ts";

if (!await openStackAvailable()) {
  console.error(
    "openstack lane: needs root and apt-get (or the packages of hack/openstack/install.sh installed); not run",
  );
  Deno.exit(1);
}

plainOutputForChildren();
const t0 = Date.now();
const seconds = () => ((Date.now() - t0) / 1000).toFixed(0);
const [env, cloud] = await Promise.all([
  startEnvtest(),
  startOpenStack(LANE_CLOUD),
]);
console.error(`openstack lane: cloud and API server up after ${seconds()} s`);

const child = new Deno.Command(Deno.execPath(), {
  args: [
    "test",
    "--frozen",
    "--allow-all",
    ...(Deno.args.length > 0 ? Deno.args : [
      new URL("./contract_test.ts", import.meta.url).pathname,
      new URL("./drain_test.ts", import.meta.url).pathname,
      new URL("./hypervisor_sync_test.ts", import.meta.url).pathname,
      new URL("./faults_test.ts", import.meta.url).pathname,
      new URL("./nova_limit_test.ts", import.meta.url).pathname,
      new URL("./arrival_test.ts", import.meta.url).pathname,
      new URL("./auth_versions_test.ts", import.meta.url).pathname,
      new URL("./regions_test.ts", import.meta.url).pathname,
      new URL("./predictions_test.ts", import.meta.url).pathname,
      new URL("./notifications_test.ts", import.meta.url).pathname,
      new URL("./notified_drain_test.ts", import.meta.url).pathname,
      new URL("./notified_cold_drain_test.ts", import.meta.url).pathname,
      new URL("./notified_finished_test.ts", import.meta.url).pathname,
      new URL("./suspended_test.ts", import.meta.url).pathname,
      new URL("./capacity_test.ts", import.meta.url).pathname,
      new URL("./maintenance_test.ts", import.meta.url).pathname,
      new URL("./convergence_test.ts", import.meta.url).pathname,
    ]),
  ],
  env: {
    [SHARED_ENV]: describeEnvtest(env),
    [SHARED_OPENSTACK_ENV]: describeOpenStack(cloud),
  },
  stdin: "null",
  stdout: "inherit",
  stderr: "inherit",
}).spawn();

let stopping: Promise<void> | undefined;
const stopAll = () => {
  stopping ??= (async () => {
    try {
      child.kill("SIGTERM");
    } catch { /* ended */ }
    await Promise.all([cloud.stop(), env.stop()]);
  })();
  return stopping;
};
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  Deno.addSignalListener(
    signal,
    () => void stopAll().then(() => Deno.exit(130)),
  );
}
const status = await child.status;
await stopAll();
console.error(
  `openstack lane: ${
    status.success ? "passed" : `failed (exit ${status.code})`
  } after ${seconds()} s`,
);
Deno.exit(status.code);
