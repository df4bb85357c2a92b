/**
 * The test runner behind `deno task test`: starts one real API server for
 * the whole run (CRDs installed), hands it to the tests through
 * `EVICTOR_ENVTEST`, and one RabbitMQ (installed first when missing and
 * possible) through `EVICTOR_RABBITMQ` for the tests of Nova's
 * notifications, runs `deno test`, and stops the server however the run
 * ends. Extra arguments are passed to `deno test` (for example a path).
 * Without arguments, the real-OpenStack lane (tests/openstack/) follows the
 * main run where it can run (root and apt-get, or its packages installed);
 * elsewhere one line says it was skipped and how to run it.
 *
 * @module
 */
import {
  describeEnvtest,
  SHARED_ENV,
  startEnvtest,
} from "./harness/envtest.ts";
import { openStackAvailable } from "./harness/openstack.ts";
import { denoPinNoteHere } from "./harness/deno_pin.ts";
import {
  describeRabbitMq,
  type RabbitMq,
  rabbitMqMissing,
  SHARED_RABBITMQ_ENV,
  startRabbitMq,
} from "./harness/rabbitmq.ts";
import { plainOutputForChildren } from "./harness/plain_output.ts";
import {
  SummaryScanner,
  type TestPart,
  totalLines,
} from "./harness/test_totals.ts";

// Piped or logged, no child colours its output (deno test included).
plainOutputForChildren();
const pinNote = await denoPinNoteHere();
if (pinNote !== undefined) console.error(pinNote);
const started = Date.now();
// The broker starts alongside the API server (it takes a few seconds).
const noBroker = await rabbitMqMissing();
const broker: Promise<RabbitMq | undefined> = noBroker !== undefined
  ? Promise.resolve(undefined)
  : startRabbitMq().catch((error) => {
    console.error(
      `rabbitmq: ${error instanceof Error ? error.message : error}`,
    );
    return undefined;
  });
const env = await startEnvtest();
console.error(
  `envtest: kube-apiserver ${env.server} ready in ${Date.now() - started} ms`,
);
const mq = await broker;
if (mq !== undefined) {
  console.error(
    `rabbitmq: ${mq.url} ready in ${Date.now() - started} ms`,
  );
} else {
  console.error(
    `rabbitmq: none (${
      noBroker ?? "it failed to start"
    }): the tests of Nova's notifications are ignored`,
  );
}

const child = new Deno.Command(Deno.execPath(), {
  args: [
    "test",
    "--frozen",
    "--allow-all",
    "--parallel",
    "--doc",
    // The lane's files need its cloud: tests/openstack/run.ts runs them.
    ...(Deno.args.length > 0 ? Deno.args : ["--ignore=tests/openstack/"]),
  ],
  env: {
    [SHARED_ENV]: describeEnvtest(env),
    ...(mq === undefined
      ? {}
      : { [SHARED_RABBITMQ_ENV]: describeRabbitMq(mq) }),
  },
  stdin: "null",
  stdout: "piped",
  stderr: "inherit",
}).spawn();

let stopping = false;
async function stopAll(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    try {
      child.kill("SIGTERM");
    } catch { /* already ended */ }
    await env.stop();
    await mq?.stop();
  }
  Deno.exit(code);
}
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  Deno.addSignalListener(signal, () => void stopAll(130));
}

/**
 * Passes a child's stdout through and keeps deno test's summary from it,
 * so that the run ends with plain "N passed, N failed" lines any CI reads.
 */
async function passThrough(
  stdout: ReadableStream<Uint8Array>,
): Promise<SummaryScanner> {
  const scanner = new SummaryScanner();
  const decoder = new TextDecoder();
  for await (const chunk of stdout) {
    await Deno.stdout.write(chunk);
    scanner.push(decoder.decode(chunk, { stream: true }));
  }
  scanner.end();
  return scanner;
}

const main = await passThrough(child.stdout);
const status = await child.status;
await env.stop();
await mq?.stop();
const parts: TestPart[] = [
  { name: "main suite", counts: main.counts, code: status.code },
];
let laneCode = 0;
if (Deno.args.length === 0) {
  if (await openStackAvailable()) {
    console.log(
      `tests: main suite done; the real-OpenStack lane (tests/openstack/run.ts)`,
    );
    const lane = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--frozen",
        "--allow-all",
        new URL("./openstack/run.ts", import.meta.url).pathname,
      ],
      stdin: "null",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    const laneSummary = await passThrough(lane.stdout);
    laneCode = (await lane.status).code;
    parts.push({
      name: "real-OpenStack lane",
      counts: laneSummary.counts,
      code: laneCode,
    });
  } else {
    console.log(
      "tests: skipped the real-OpenStack lane (needs root and apt-get); run it with `npx deno task test:openstack`",
    );
  }
}
// The last line totals every test run, main suite and lane together.
for (const line of totalLines(parts)) console.log(line);
Deno.exit(status.code !== 0 ? status.code : laneCode);
