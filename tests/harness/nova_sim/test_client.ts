/**
 * Test helpers of the simulator's own tests: start a simulator with a
 * token, call Nova as a client does.
 *
 * @module
 */

import { type NovaSim, type NovaSimOptions, startNovaSim } from "./server.ts";
import type { ScenarioInput } from "./scenario.ts";

/** A test body given a simulator and a token. */
export type NovaSimClient = (sim: NovaSim, token: string) => Promise<void>;

/** Starts a simulator, gets a password token, runs `fn`, closes. */
export async function withSim(
  fn: NovaSimClient,
  scenario: ScenarioInput,
  options: NovaSimOptions = {},
) {
  const sim = await startNovaSim(scenario, options);
  try {
    await fn(sim, await passwordToken(sim));
  } finally {
    await sim.close();
  }
}

/** A Keystone token for the simulator's password credentials. */
export async function passwordToken(sim: NovaSim): Promise<string> {
  const c = sim.credentials.password;
  const res = await fetch(`${sim.authUrl}/auth/tokens`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({
      auth: {
        identity: {
          methods: ["password"],
          password: {
            user: {
              name: c.username,
              domain: { name: c.userDomainName },
              password: c.password,
            },
          },
        },
        scope: {
          project: {
            name: c.projectName,
            domain: { name: c.projectDomainName },
          },
        },
      },
    }),
  });
  await res.body?.cancel();
  return res.headers.get("x-subject-token") ?? "";
}

/** Calls Nova with a token and a compute microversion (null: none). */
export async function call(
  sim: NovaSim,
  token: string,
  method: string,
  path: string,
  body?: unknown,
  mv: string | null = "2.90",
): Promise<{ status: number; headers: Headers; json: unknown }> {
  const headers: Record<string, string> = { "X-Auth-Token": token };
  if (mv !== null) headers["OpenStack-API-Version"] = `compute ${mv}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(`${sim.computeUrl}${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    json: text === "" ? undefined : JSON.parse(text),
  };
}
