/**
 * Reading the Deployment of manifests/manager/ in tests and benchmarks:
 * its shape and its memory quantities.
 *
 * @module
 */

import { parse } from "yaml";

/** The parts of the manager container the checks read. */
export interface Container {
  resources?: {
    requests?: Record<string, string>;
    limits?: Record<string, string>;
  };
  securityContext?: { readOnlyRootFilesystem?: boolean };
  volumeMounts?: { name: string; mountPath: string }[];
}

/** The parts of the Deployment the checks read. */
export interface Deployment {
  spec: {
    template: {
      spec: {
        containers: Container[];
        volumes: { name: string; emptyDir?: Record<string, unknown> }[];
      };
    };
  };
}

/** A Kubernetes memory quantity in MiB (binary and decimal suffixes). */
export function mebibytes(quantity: string): number {
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|k|M|G)?$/.exec(quantity);
  if (m === null) {
    throw new TypeError(
      `not a memory quantity: "${quantity}" (expected e.g. 192Mi)`,
    );
  }
  const factor: Record<string, number> = {
    "": 1 / 2 ** 20,
    Ki: 1 / 1024,
    Mi: 1,
    Gi: 1024,
    k: 1e3 / 2 ** 20,
    M: 1e6 / 2 ** 20,
    G: 1e9 / 2 ** 20,
  };
  return Number(m[1]) * (factor[m[2] ?? ""] ?? NaN);
}

/** The manager container's memory request and limit, MiB. */
export async function managerMemoryMib(): Promise<
  { request: number; limit: number }
> {
  const text = await Deno.readTextFile(
    new URL("../../manifests/manager/deployment.yaml", import.meta.url),
  );
  const manager = (parse(text) as Deployment).spec.template.spec.containers[0];
  return {
    request: mebibytes(manager?.resources?.requests?.["memory"] ?? ""),
    limit: mebibytes(manager?.resources?.limits?.["memory"] ?? ""),
  };
}
