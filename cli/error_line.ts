/**
 * Every failure of the plugin as one line on stderr and an exit code,
 * never a stack trace, and exit code 1 as kubectl's: usage mistakes, the
 * API server's refusals, an unreachable API server, a bad kubeconfig or
 * clouds.yaml, an OpenStack error, a JSONPath that fails on the data.
 *
 * @module
 */
import * as k8s from "@kubernetes/client-node";
import { z } from "zod";
import { errText, oneLine } from "../framework/errors.ts";
import { ConfigError, OpenStackError } from "../openstack/mod.ts";
import { ApiServerUnreachableError, KubeconfigError } from "./kube_config.ts";
import { JsonPathError } from "./jsonpath.ts";
import { WatchRefusedError } from "./eviction_watch.ts";
import { UsageError } from "./usage.ts";

/**
 * The message of an API server's refusal (its Status message), else its code.
 *
 * @example
 * ```ts
 * import * as k8s from "@kubernetes/client-node";
import { z } from "zod";
 * import { apiMessage } from "./error_line.ts";
 * const e = new k8s.ApiException(403, "", { message: "forbidden: no" }, {});
 * console.assert(apiMessage(e) === "forbidden: no");
 * ```
 */
export function apiMessage(e: k8s.ApiException<unknown>): string {
  try {
    const body = typeof e.body === "string" ? JSON.parse(e.body) : e.body;
    if (body && typeof body === "object" && "message" in body) {
      return String(body.message);
    }
  } catch { /* not JSON */ }
  return `the API server answered ${e.code}`;
}

/**
 * The one line (`error: ...`) and exit code of a failure.
 *
 * @example
 * ```ts
 * import { errorLine } from "./error_line.ts";
 * import { UsageError } from "./usage.ts";
 * const { line, code } = errorLine(new UsageError("drain needs a HYPERVISOR name", "drain"));
 * console.assert(code === 1 && !line.includes("\n"));
 * ```
 */
export function errorLine(e: unknown): { line: string; code: number } {
  const one = (text: string) => text.replace(/\s*\n\s*/g, " ").trim();
  if (e instanceof UsageError) {
    const help = e.command === undefined
      ? "kubectl evictor --help"
      : `kubectl evictor ${e.command} --help`;
    return { line: one(`error: ${e.message} (see "${help}")`), code: 1 };
  }
  if (e instanceof k8s.ApiException) {
    return { line: one(`error: ${apiMessage(e)}`), code: 1 };
  }
  if (e instanceof OpenStackError) {
    return { line: one(`error: OpenStack: ${errText(e)}`), code: 1 };
  }
  if (
    e instanceof ConfigError || e instanceof KubeconfigError ||
    e instanceof ApiServerUnreachableError || e instanceof JsonPathError ||
    e instanceof WatchRefusedError
  ) {
    return { line: one(`error: ${e.message}`), code: 1 };
  }
  if (e instanceof z.ZodError) {
    const issue = e.issues[0];
    return {
      line: one(
        `error: the API server sent an object this plugin cannot read (a newer CRD?): ${
          issue?.path.map(String).join(".") || "(top level)"
        }: ${issue?.message ?? "invalid"}`,
      ),
      code: 1,
    };
  }
  // anything else (a bug): the message and its causes, no stack
  return { line: one(`error: ${oneLine(e)}`), code: 1 };
}
