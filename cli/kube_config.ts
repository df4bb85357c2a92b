/**
 * Which cluster the plugin talks to, found as kubectl finds it:
 * `--kubeconfig FILE` (that file only), else every file of a
 * colon-separated `KUBECONFIG` merged as kubectl merges them, else
 * `~/.kube/config`, else the pod's service account; `--context NAME`
 * picks a context of it. Its API clients carry the plugin's User-Agent.
 *
 * @module
 */
import * as k8s from "@kubernetes/client-node";
import {
  kubeconfigDocument,
  kubeconfigPathsFromEnv,
  mergeKubeconfigs,
  readKubeconfigs,
  selectContext,
} from "../framework/kubeconfig.ts";
import { PLUGIN_USER_AGENT } from "../app/version.ts";
import { oneLine } from "../framework/errors.ts";
import { warningMiddleware } from "./warnings.ts";

/** The plugin's cluster flags. */
export interface KubeTarget {
  /** `--kubeconfig FILE`. */
  kubeconfig?: string | undefined;
  /** `--context NAME`. */
  context?: string | undefined;
}

/** A problem with the kubeconfig; the message is one line. */
export class KubeconfigError extends Error {
  override name = "KubeconfigError";
}

/**
 * Loads the KubeConfig of `target` from `env` (`KUBECONFIG`, `HOME`,
 * `KUBERNETES_SERVICE_HOST`).
 *
 * @throws {KubeconfigError} naming the file, variable or flag at fault.
 *
 * @example
 * ```ts ignore
 * const kc = await loadPluginKubeConfig({ context: "eu-de-2" }, Deno.env.toObject());
 * ```
 */
export async function loadPluginKubeConfig(
  target: KubeTarget,
  env: Readonly<Record<string, string | undefined>>,
): Promise<k8s.KubeConfig> {
  const kc = new k8s.KubeConfig();
  const paths = target.kubeconfig !== undefined
    ? [target.kubeconfig]
    : kubeconfigPathsFromEnv(env["KUBECONFIG"]);
  if (paths.length === 0 && env["HOME"] !== undefined) {
    paths.push(`${env["HOME"]}/.kube/config`);
  }
  const files = await readKubeconfigs(paths).catch((e) => {
    throw new KubeconfigError(e instanceof Error ? e.message : String(e));
  });
  if (files.length === 0) {
    if (target.kubeconfig !== undefined) {
      throw new KubeconfigError(
        `--kubeconfig "${target.kubeconfig}": no such file; expected a kubeconfig file`,
      );
    }
    if (env["KUBERNETES_SERVICE_HOST"] !== undefined) {
      kc.loadFromCluster();
      if (target.context !== undefined) {
        throw new KubeconfigError(
          `--context "${target.context}": no kubeconfig file to pick it from (in a pod, the service account is the only context)`,
        );
      }
      return kc;
    }
    throw new KubeconfigError(
      `no kubeconfig: ${
        env["KUBECONFIG"]
          ? `KUBECONFIG "${env["KUBECONFIG"]}" names no existing file`
          : "KUBECONFIG is not set and ~/.kube/config does not exist"
      }; expected --kubeconfig FILE or KUBECONFIG`,
    );
  }
  const merged = mergeKubeconfigs(files);
  let context: string;
  try {
    context = selectContext(merged, target.context);
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    throw new KubeconfigError(
      target.context === undefined ? message : `--context: ${message}`,
    );
  }
  try {
    kc.loadFromString(JSON.stringify(kubeconfigDocument(merged)));
  } catch (e) {
    throw new KubeconfigError(
      `kubeconfig ${merged.files.join(":")}: ${
        e instanceof Error ? e.message : String(e)
      }`,
    );
  }
  kc.setCurrentContext(context);
  if (kc.getCurrentCluster() === null) {
    throw new KubeconfigError(
      `kubeconfig ${
        merged.files.join(":")
      }: context "${context}" names no cluster that is defined`,
    );
  }
  return kc;
}

/** The API server did not answer (refused, reset, TLS, DNS); one line. */
export class ApiServerUnreachableError extends Error {
  override name = "ApiServerUnreachableError";
}

/**
 * A CustomObjectsApi of the KubeConfig's current context whose requests
 * carry the plugin's User-Agent (client-node's `makeApiClient` pins its own);
 * the API server's warnings of every answer go to `warn` (cli/warnings.ts);
 * a call that gets no answer fails with an
 * {@linkcode ApiServerUnreachableError} naming the server.
 *
 * @example
 * ```ts ignore
 * const api = customObjectsApi(kc, warningPrinter(io.err));
 * ```
 */
export function customObjectsApi(
  kc: k8s.KubeConfig,
  warn: (text: string) => void,
): k8s.CustomObjectsApi {
  return pluginApi(kc, warn, k8s.CustomObjectsApi);
}

/**
 * Any client-node API class as {@linkcode customObjectsApi} makes its
 * client: the plugin's User-Agent, warnings to `warn`, one line when the
 * API server does not answer.
 *
 * @example
 * ```ts ignore
 * const auth = pluginApi(kc, warn, k8s.AuthenticationV1Api);
 * ```
 */
export function pluginApi<T extends object>(
  kc: k8s.KubeConfig,
  warn: (text: string) => void,
  Api: new (configuration: k8s.Configuration) => T,
): T {
  const cluster = kc.getCurrentCluster();
  if (cluster === null) {
    throw new KubeconfigError(
      `kubeconfig context "${kc.getCurrentContext()}" names no cluster`,
    );
  }
  const api = new Api(k8s.createConfiguration({
    baseServer: new k8s.ServerConfiguration(cluster.server, {}),
    authMethods: { default: kc },
    middleware: [k8s.setHeaderMiddleware("User-Agent", PLUGIN_USER_AGENT)],
    promiseMiddleware: [warningMiddleware(warn)],
  }));
  return new Proxy(api, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== "function") return value;
      return async (...args: unknown[]) => {
        try {
          return await value.apply(target, args);
        } catch (e) {
          if (e instanceof k8s.ApiException) throw e;
          throw new ApiServerUnreachableError(
            `cannot reach the API server ${cluster.server} (context "${kc.getCurrentContext()}"): ${
              oneLine(e)
            }`,
            { cause: e },
          );
        }
      };
    },
  });
}
