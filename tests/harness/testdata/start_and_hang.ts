// Starts a dedicated envtest, prints its folder, then hangs until killed:
// envtest_test.ts kills this process with SIGKILL and checks that the
// watchdogs take etcd and kube-apiserver down with it.
import { startEnvtest } from "../envtest.ts";

const env = await startEnvtest({ installCrds: false });
console.log(
  JSON.stringify({ dir: env.kubeconfigPath.replace(/\/[^/]+$/, "") }),
);
setInterval(() => {}, 1000);
