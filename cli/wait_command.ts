/**
 * `kubectl evictor wait HYPERVISOR... [--timeout DURATION]`: follows
 * existing Evictions, whoever created them, as `drain --wait` does, with
 * one deadline for all of them (cli/follow.ts).
 *
 * @module
 */
import type * as k8s from "@kubernetes/client-node";
import { customObjectsApi, type KubeTarget } from "./kube_config.ts";
import { followEvictions } from "./follow.ts";
import { parseCommand, timeoutFlag, UsageError, usageOf } from "./usage.ts";

/** What `wait` needs. */
export interface WaitIo {
  kubeConfig: (target: KubeTarget) => Promise<k8s.KubeConfig>;
  out: (line: string) => void;
  err: (line: string) => void;
  warn: (text: string) => void;
  interactive: boolean;
}

/**
 * Runs `wait` with `args`; returns the exit code of `drain --wait`.
 *
 * @example
 * ```ts ignore
 * const code = await runWait(["node042", "node043", "--timeout", "30m"], io);
 * ```
 */
export async function runWait(args: string[], io: WaitIo): Promise<number> {
  const { values, positionals } = parseCommand("wait", args, {
    timeout: { type: "string", default: "0" },
  });
  if (values.help) {
    io.out(usageOf("wait"));
    return 0;
  }
  const names = [...new Set(positionals)];
  if (names.length === 0) {
    throw new UsageError("wait needs the HYPERVISOR of an Eviction", "wait");
  }
  const timeoutMs = timeoutFlag("wait", values.timeout);
  const kc = await io.kubeConfig({
    kubeconfig: values.kubeconfig,
    context: values.context,
  });
  return await followEvictions(
    kc,
    customObjectsApi(kc, io.warn),
    names,
    timeoutMs,
    io,
  );
}
