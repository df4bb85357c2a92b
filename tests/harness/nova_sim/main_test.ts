import assert from "node:assert/strict";
import amqp from "amqplib";
import { rabbitMqMissing, sharedRabbitMq } from "../rabbitmq.ts";

/** The permission flags of the `nova-sim` task in deno.json (one place). */
async function taskFlags(): Promise<string[]> {
  const denoJson = JSON.parse(
    await Deno.readTextFile(new URL("../../../deno.json", import.meta.url)),
  );
  const task: string = denoJson.tasks["nova-sim"];
  return task.split(/\s+/).filter((a) => a.startsWith("--allow"));
}

Deno.test("nova-sim CLI: prints the auth URL and credentials, writes clouds.yaml, stops on SIGTERM", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const scenario =
      new URL("./scenarios/small.yaml", import.meta.url).pathname;
    const main = new URL("./main.ts", import.meta.url).pathname;
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        ...await taskFlags(),
        main,
        "--scenario",
        scenario,
        "--clouds-yaml",
        `${dir}/clouds.yaml`,
      ],
      stdout: "piped",
      stderr: "piped",
      env: { NO_COLOR: "1" },
    }).spawn();
    const reader = child.stdout.pipeThrough(new TextDecoderStream())
      .getReader();
    let out = "";
    while (!out.includes("wrote ")) {
      const { value, done } = await reader.read();
      if (done) break;
      out += value;
    }
    const authUrl = /OS_AUTH_URL=(\S+)/.exec(out)?.[1] ?? "";
    assert.match(authUrl, /^http:\/\/127\.0\.0\.1:\d+\/identity\/v3$/);
    assert.match(out, /OS_PASSWORD=secret/);
    const clouds = await Deno.readTextFile(`${dir}/clouds.yaml`);
    assert.match(clouds, new RegExp(`auth_url: ${authUrl}`));
    const res = await fetch(`${authUrl}/auth/tokens`, {
      method: "POST",
      body: JSON.stringify({
        auth: {
          identity: {
            methods: ["application_credential"],
            application_credential: {
              id: "evictor-appcred",
              secret: "appcred-secret",
            },
          },
        },
      }),
    });
    await res.body?.cancel();
    assert.equal(res.status, 201);
    child.kill("SIGTERM");
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      out += value;
    }
    const status = await child.status;
    await child.stderr.cancel();
    assert.equal(status.code, 0);
    assert.match(out, /served 1 calls/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("nova-sim CLI: a bad scenario file is one line naming the file and field", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      `${dir}/s.json`,
      JSON.stringify({
        hosts: [{ name: "a", maxConcurrentLiveMigrations: 0 }],
      }),
    );
    const main = new URL("./main.ts", import.meta.url).pathname;
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        ...await taskFlags(),
        main,
        "--scenario",
        `${dir}/s.json`,
      ],
      env: { NO_COLOR: "1" },
    }).output();
    assert.equal(out.code, 1);
    const err = new TextDecoder().decode(out.stderr).trim();
    assert.match(err, /s\.json: hosts\[0\]\.maxConcurrentLiveMigrations: /);
    assert.equal(err.split("\n").length, 1);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("nova-sim CLI: --amqp-url must be an amqp:// URL", async () => {
  const main = new URL("./main.ts", import.meta.url).pathname;
  const scenario = new URL("./scenarios/small.yaml", import.meta.url).pathname;
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...await taskFlags(),
      main,
      "--scenario",
      scenario,
      "--amqp-url",
      "http://x/",
    ],
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  assert.equal(out.code, 2);
  assert.match(
    new TextDecoder().decode(out.stderr),
    /--amqp-url: expected amqp:\/\//,
  );
});

const noBroker = await rabbitMqMissing();
Deno.test({
  name:
    "nova-sim CLI: with --amqp-url it declares Nova's exchange on that broker",
  ignore: noBroker !== undefined,
  async fn() {
    const mq = await sharedRabbitMq();
    const main = new URL("./main.ts", import.meta.url).pathname;
    const scenario =
      new URL("./scenarios/small.yaml", import.meta.url).pathname;
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        ...await taskFlags(),
        main,
        "--scenario",
        scenario,
        "--amqp-url",
        mq.url,
      ],
      stdout: "piped",
      stderr: "piped",
      env: { NO_COLOR: "1" },
    }).spawn();
    try {
      const reader = child.stdout.pipeThrough(new TextDecoderStream())
        .getReader();
      let out = "";
      while (!out.includes("listening")) {
        const { value, done } = await reader.read();
        if (done) break;
        out += value;
      }
      assert.match(out, /listening/);
      reader.releaseLock();
      const conn = await amqp.connect(mq.url);
      const ch = await conn.createChannel();
      await ch.checkExchange("nova");
      await ch.checkQueue("versioned_notifications.info");
      await conn.close();
    } finally {
      child.kill("SIGTERM");
      await child.status;
      await child.stdout.cancel().catch(() => {});
      await child.stderr.cancel();
    }
  },
});
