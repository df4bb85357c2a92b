/**
 * Standalone Nova simulator:
 * `deno task nova-sim --scenario FILE [--port N] [--clouds-yaml PATH] [--cloud NAME] [--amqp-url URL]`;
 * with `--amqp-url` it publishes Nova's versioned notifications to that
 * RabbitMQ (exchange `nova`), as Nova does.
 * Prints the auth URL and credentials, optionally writes a clouds.yaml, and
 * serves until interrupted.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { loadScenarioFile } from "./scenario.ts";
import { startNovaSim } from "./server.ts";

const USAGE =
  "usage: deno task nova-sim --scenario FILE [--port N] [--hostname ADDR] [--clouds-yaml PATH] [--cloud NAME] [--auth password|application_credential] [--amqp-url amqp://user:pass@host:port/]";

async function main(args: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        scenario: { type: "string" },
        port: { type: "string", default: "0" },
        hostname: { type: "string", default: "127.0.0.1" },
        "clouds-yaml": { type: "string" },
        cloud: { type: "string", default: "nova-sim" },
        auth: { type: "string", default: "password" },
        "amqp-url": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
    }));
  } catch (e) {
    console.error(`${e instanceof Error ? e.message : String(e)}\n${USAGE}`);
    return 2;
  }
  if (values.help === true) {
    console.log(USAGE);
    return 0;
  }
  if (values.scenario === undefined) {
    console.error(
      `--scenario: required; expected a YAML or JSON scenario file\n${USAGE}`,
    );
    return 2;
  }
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(
      `--port: "${values.port}" is not a port number; expected 0..65535`,
    );
    return 2;
  }
  const auth = values.auth;
  if (auth !== "password" && auth !== "application_credential") {
    console.error(
      `--auth: "${auth}" is not supported; expected password or application_credential`,
    );
    return 2;
  }
  let scenario;
  try {
    scenario = await loadScenarioFile(values.scenario);
  } catch (e) {
    console.error(e instanceof Error ? e.message : String(e));
    return 1;
  }
  const amqpUrl = values["amqp-url"];
  if (amqpUrl !== undefined && !/^amqps?:\/\/[^/]/.test(amqpUrl)) {
    console.error(
      `--amqp-url: expected amqp://user:password@host:port/ or amqps://...`,
    );
    return 2;
  }
  const sim = await startNovaSim(scenario, {
    port,
    hostname: values.hostname,
    ...(amqpUrl === undefined ? {} : { amqpUrl }),
  });
  const c = sim.credentials;
  console.log(`nova-sim listening; time scale ${scenario.timeScale}x`);
  console.log(`OS_AUTH_URL=${sim.authUrl}`);
  console.log(`OS_REGION_NAME=${c.region}`);
  console.log(`OS_USERNAME=${c.password.username}`);
  console.log(`OS_PASSWORD=${c.password.password}`);
  console.log(`OS_USER_DOMAIN_NAME=${c.password.userDomainName}`);
  console.log(`OS_PROJECT_NAME=${c.password.projectName}`);
  console.log(`OS_PROJECT_DOMAIN_NAME=${c.password.projectDomainName}`);
  console.log(`OS_APPLICATION_CREDENTIAL_ID=${c.applicationCredential.id}`);
  console.log(
    `OS_APPLICATION_CREDENTIAL_SECRET=${c.applicationCredential.secret}`,
  );
  const cloudsPath = values["clouds-yaml"];
  if (cloudsPath !== undefined) {
    await Deno.writeTextFile(
      cloudsPath,
      sim.cloudsYaml({ cloud: values.cloud, auth }),
    );
    console.log(
      `wrote ${cloudsPath} (cloud "${values.cloud}"); use OS_CLIENT_CONFIG_FILE=${cloudsPath} OS_CLOUD=${values.cloud}`,
    );
  }
  const stop = Promise.withResolvers<void>();
  const onSignal = () => stop.resolve();
  Deno.addSignalListener("SIGINT", onSignal);
  Deno.addSignalListener("SIGTERM", onSignal);
  await stop.promise;
  Deno.removeSignalListener("SIGINT", onSignal);
  Deno.removeSignalListener("SIGTERM", onSignal);
  const counters = sim.counters();
  await sim.close();
  console.log(`served ${counters.total} calls`);
  return 0;
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
