/**
 * Compute microversion negotiation: the highest version both evictor and
 * Nova support, from Nova's version document (`version` is Nova's maximum,
 * `min_version` its minimum), never below the floor evictor's calls need.
 * A too-new microversion is a 406 from every Nova call, so it is settled
 * once, before the first call, and a cloud outside the range is refused
 * with both ranges named.
 *
 * What the floor is made of (each at or below it):
 * - 2.25: `block_migration: "auto"` in `os-migrateLive`;
 * - 2.47: the flavor (RAM, vCPUs) embedded in servers, which the planner
 *   and the predictions read;
 * - 2.53: service and hypervisor ids as UUIDs, `PUT /os-services/{id}`;
 * - 2.56: a host in `migrate` (cold migration to a chosen host);
 * - 2.59: `changes-since`, paging and `uuid` on `GET /os-migrations`.
 * Above the floor, newer behaviour is used where Nova has it: aborting a
 * `queued` or `preparing` live migration (2.65), `user_id`/`project_id` on
 * migrations (2.80), the instance action events' `details` (2.84).
 *
 * @module
 */

import { compareMicroversions } from "./config.ts";
import { OpenStackError } from "./errors.ts";

/** The lowest compute microversion evictor works with. */
export const COMPUTE_FLOOR = "2.59";
/** The highest compute microversion evictor knows (its default). */
export const COMPUTE_CEILING = "2.90";

/** Nova's supported range, from its version document. */
export interface VersionRange {
  /** Lowest supported microversion (`min_version`). */
  min: string;
  /** Highest supported microversion (`version`). */
  max: string;
}

/**
 * Nova's microversion range and evictor's do not meet, or a configured
 * `compute_api_version` is outside Nova's range: no call can work.
 *
 * @example
 * ```ts
 * import { MicroversionError } from "./microversion.ts";
 * const e = new MicroversionError("Nova supports 2.1 to 2.40; evictor needs 2.59 to 2.90");
 * console.log(e.name); // MicroversionError
 * ```
 */
export class MicroversionError extends OpenStackError {}

function shape(v: string, what: string): string {
  if (!/^2\.\d+$/.test(v)) {
    throw new RangeError(`${what} must look like "2.N", got "${v}"`);
  }
  return v;
}

function lower(a: string, b: string): string {
  return compareMicroversions(a, b) <= 0 ? a : b;
}

function higher(a: string, b: string): string {
  return compareMicroversions(a, b) >= 0 ? a : b;
}

/**
 * The compute microversion to send: `pinned` (a configured
 * `compute_api_version`) when Nova supports it, else the highest of
 * evictor's range [{@linkcode COMPUTE_FLOOR}, `ceiling`] that Nova supports.
 *
 * @throws {MicroversionError} naming both ranges when they do not meet, or
 * the pinned version and Nova's range when Nova does not support it.
 *
 * @example
 * ```ts
 * import { chooseComputeVersion } from "./microversion.ts";
 * console.log(chooseComputeVersion({ min: "2.1", max: "2.88" })); // 2.88
 * console.log(chooseComputeVersion({ min: "2.1", max: "2.93" })); // 2.90
 * console.log(chooseComputeVersion({ min: "2.1", max: "2.93" }, { pinned: "2.79" })); // 2.79
 * ```
 */
export function chooseComputeVersion(
  nova: VersionRange,
  options: { pinned?: string; ceiling?: string; where?: string } = {},
): string {
  const novaMin = shape(nova.min, "Nova's min_version");
  const novaMax = shape(nova.max, "Nova's version");
  const where = options.where === undefined
    ? "Nova"
    : `Nova at ${options.where}`;
  const novaRange = `${novaMin} to ${novaMax}`;
  if (options.pinned !== undefined) {
    const pinned = shape(options.pinned, "compute_api_version");
    if (
      compareMicroversions(pinned, novaMin) < 0 ||
      compareMicroversions(pinned, novaMax) > 0
    ) {
      throw new MicroversionError(
        `compute_api_version ${pinned} is not supported by ${where}, which supports compute microversions ${novaRange}; set one in that range (evictor needs at least ${COMPUTE_FLOOR}) or leave it unset to negotiate`,
      );
    }
    return pinned;
  }
  const ceiling = shape(options.ceiling ?? COMPUTE_CEILING, "ceiling");
  const best = lower(ceiling, novaMax);
  if (compareMicroversions(best, higher(COMPUTE_FLOOR, novaMin)) < 0) {
    throw new MicroversionError(
      `${where} supports compute microversions ${novaRange}; evictor needs ${COMPUTE_FLOOR} to ${ceiling} (${COMPUTE_FLOOR}: changes-since and paging on os-migrations): no version both support`,
    );
  }
  return best;
}

/**
 * The URL of Nova's version document for a compute endpoint: the endpoint
 * up to its `/v2.1` (or `/v2`) segment, with a trailing slash (a catalog
 * entry may carry a project id after it).
 *
 * @example
 * ```ts
 * import { versionDocumentUrl } from "./microversion.ts";
 * console.log(versionDocumentUrl("https://nova.example/compute/v2.1/6f0c")); // https://nova.example/compute/v2.1/
 * ```
 */
export function versionDocumentUrl(computeBase: string): string {
  const url = new URL(computeBase);
  const parts = url.pathname.split("/");
  const at = parts.findIndex((p) => /^v2(\.1)?$/.test(p));
  const kept = at === -1 ? parts : parts.slice(0, at + 1);
  url.pathname = `${kept.join("/").replace(/\/+$/, "")}/`;
  url.search = "";
  return url.toString();
}
