/**
 * `drain` refuses names that match no Hypervisor: a typo (`nod042` for
 * `node042`) would otherwise create an Eviction that ends at once with
 * nothing drained, while the host meant keeps its VMs. The refusal names
 * each unknown name with the closest existing ones.
 *
 * @module
 */
import * as k8s from "@kubernetes/client-node";
import { HypervisorResource } from "../models/mod.ts";
import { apiMessage } from "./error_line.ts";
import { closestNames } from "./closest_names.ts";

const { group, version, plural } = HypervisorResource;

/**
 * The one-line refusal of `unknown` names, each with the closest of the
 * `existing` Hypervisor names.
 *
 * @example
 * ```ts
 * import { unknownHypervisorsMessage } from "./hypervisor_names.ts";
 * console.log(unknownHypervisorsMessage(["nod042"], ["node042", "node043"]));
 * // no Hypervisor named "nod042" (did you mean node042?): nothing created; check the names (kubectl get hypervisors), or pass --allow-unknown to drain them anyway
 * ```
 */
export function unknownHypervisorsMessage(
  unknown: readonly string[],
  existing: readonly string[],
): string {
  const named = unknown.map((name) => {
    const close = closestNames(name, existing);
    return `"${name}" (${
      close.length === 0
        ? "no Hypervisor has a similar name"
        : `did you mean ${
          close.length === 1
            ? close[0]
            : `${close.slice(0, -1).join(", ")} or ${close.at(-1)}`
        }?`
    })`;
  });
  return `no Hypervisor named ${
    named.join(", ")
  }: nothing created; check the names (kubectl get hypervisors), or pass --allow-unknown to drain them anyway`;
}

/** Names that match no Hypervisor, refused; the message is one line. */
export class UnknownHypervisorsError extends Error {
  override name = "UnknownHypervisorsError";
}

/**
 * Checks that each name is a Hypervisor's: one GET each (a cluster may hold
 * thousands), and the list of names only when some is missing, for the
 * suggestions.
 *
 * @throws {UnknownHypervisorsError} naming the unknown ones.
 * @throws {Error} when the API server does not let the user read
 * Hypervisors (the check cannot be made: `--allow-unknown` skips it).
 *
 * @example
 * ```ts ignore
 * await checkHypervisorNames(api, ["node042", "nod043"]);
 * ```
 */
export async function checkHypervisorNames(
  api: k8s.CustomObjectsApi,
  names: readonly string[],
): Promise<void> {
  const found = await Promise.all(names.map(async (name) => {
    try {
      await api.getClusterCustomObject({ group, version, plural, name });
      return true;
    } catch (e) {
      if (e instanceof k8s.ApiException && e.code === 404) return false;
      throw cannotCheck(e);
    }
  }));
  const unknown = names.filter((_, i) => !found[i]);
  if (unknown.length === 0) return;
  let list: { items?: { metadata?: { name?: string } }[] };
  try {
    list = await api.listClusterCustomObject({ group, version, plural });
  } catch (e) {
    throw cannotCheck(e);
  }
  const existing = (list.items ?? []).flatMap((h) =>
    h.metadata?.name === undefined ? [] : [h.metadata.name]
  );
  throw new UnknownHypervisorsError(
    unknownHypervisorsMessage(unknown, existing),
  );
}

function cannotCheck(e: unknown): unknown {
  if (!(e instanceof k8s.ApiException)) return e;
  return new Error(
    `cannot check the names against the Hypervisors: ${
      apiMessage(e)
    }; pass --allow-unknown to drain without the check`,
  );
}
