import assert from "node:assert/strict";
import {
  amqpVhost,
  feedPermissions,
  missingExchangeMessage,
  parseAccessRefusal,
  refusalMessage,
} from "./amqp_refusals.ts";

Deno.test("parseAccessRefusal: the permission, operation, resource and user of RabbitMQ's text", () => {
  const refused = (op: string, what: string) =>
    `Operation failed: ${op}; 403 (ACCESS-REFUSED) with message "ACCESS_REFUSED - ${what} refused for user 'evictor'"`;
  const table: [string, ReturnType<typeof parseAccessRefusal>][] = [
    // RabbitMQ 3.10's text (verified): the permission follows from the operation.
    [
      refused("BasicConsume", "access to queue 'amq.gen-Ab_1' in vhost '/'"),
      {
        permission: "read",
        operation: "BasicConsume",
        kind: "queue",
        name: "amq.gen-Ab_1",
        vhost: "/",
        user: "evictor",
      },
    ],
    [
      refused("QueueDeclare", "access to queue 'amq.gen-q' in vhost 'v'"),
      {
        permission: "configure",
        operation: "QueueDeclare",
        kind: "queue",
        name: "amq.gen-q",
        vhost: "v",
        user: "evictor",
      },
    ],
    [
      refused("QueueBind", "access to queue 'amq.gen-q' in vhost '/'"),
      {
        permission: "write",
        operation: "QueueBind",
        kind: "queue",
        name: "amq.gen-q",
        vhost: "/",
        user: "evictor",
      },
    ],
    [
      refused("QueueBind", "access to exchange 'nova' in vhost 'nova-prod'"),
      {
        permission: "read",
        operation: "QueueBind",
        kind: "exchange",
        name: "nova",
        vhost: "nova-prod",
        user: "evictor",
      },
    ],
    // A text that names the permission wins.
    [
      refused("QueueBind", "write access to queue 'amq.gen-x' in vhost '/'"),
      {
        permission: "write",
        operation: "QueueBind",
        kind: "queue",
        name: "amq.gen-x",
        vhost: "/",
        user: "evictor",
      },
    ],
    // The channel's close event: no operation, no permission to infer.
    [
      `Channel closed by server: 403 (ACCESS-REFUSED) with message "ACCESS_REFUSED - access to queue 'amq.gen-x' in vhost '/' refused for user 'u'"`,
      {
        permission: undefined,
        operation: undefined,
        kind: "queue",
        name: "amq.gen-x",
        vhost: "/",
        user: "u",
      },
    ],
    // Not a refusal of one resource: a bad login.
    [
      'Handshake terminated by server: 403 (ACCESS-REFUSED) with message "ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN."',
      undefined,
    ],
    ["connect ECONNREFUSED 127.0.0.1:5672", undefined],
    ["", undefined],
  ];
  for (const [text, want] of table) {
    assert.deepEqual(parseAccessRefusal(text), want, text);
  }
});

Deno.test("feedPermissions: own queues, and read on the exchange escaped", () => {
  assert.deepEqual(feedPermissions("nova"), {
    configure: "^amq\\.gen-.*",
    write: "^amq\\.gen-.*",
    read: "^(amq\\.gen-.*|nova)$",
  });
  assert.equal(
    feedPermissions("nova.prod").read,
    "^(amq\\.gen-.*|nova\\.prod)$",
  );
  // The read pattern matches the exchange and the feed's own queues only.
  const read = new RegExp(feedPermissions("nova").read);
  assert.ok(read.test("nova"));
  assert.ok(read.test("amq.gen-Zx9"));
  assert.ok(!read.test("nova2"));
  assert.ok(!read.test("versioned_notifications.info"));
});

Deno.test("refusalMessage: one line naming the permission, the resource and the fix", () => {
  const line = refusalMessage({
    permission: "read",
    operation: "BasicConsume",
    kind: "queue",
    name: "amq.gen-q",
    vhost: "/",
    user: "evictor",
  }, "nova");
  assert.ok(!line.includes("\n"));
  assert.match(line, /\(BasicConsume\): the feed's user needs read permission/);
  assert.match(
    line,
    /refused read access to queue 'amq\.gen-q' in vhost '\/' for user 'evictor'/,
  );
  assert.ok(
    line.includes(
      "rabbitmqctl set_permissions -p '/' 'evictor' '^amq\\.gen-.*' '^amq\\.gen-.*' '^(amq\\.gen-.*|nova)$'",
    ),
    line,
  );
});

Deno.test("amqpVhost: / for an empty path, else the decoded path", () => {
  const table: [string, string][] = [
    ["amqp://u:p@h:5672/", "/"],
    ["amqp://h", "/"],
    ["amqp://h/nova", "nova"],
    ["amqps://h/%2F", "/"],
    ["amqp://h/a%2Fb", "a/b"],
  ];
  for (const [url, want] of table) assert.equal(amqpVhost(url), want, url);
});

Deno.test("missingExchangeMessage: one line with the exchange, the vhost and Nova's settings", () => {
  const line = missingExchangeMessage("nova-eu", "prod");
  assert.ok(!line.includes("\n"));
  for (
    const part of [
      "'nova-eu'",
      "vhost 'prod'",
      "[DEFAULT] control_exchange",
      "[oslo_messaging_notifications] transport_url",
      "driver = messagingv2",
      "topics",
      "[notifications] notification_format",
      "--nova-notifications-exchange",
    ]
  ) {
    assert.ok(line.includes(part), `${part} in ${line}`);
  }
});

Deno.test("refusalMessage: without a known permission it still names the resource and the fix", () => {
  const line = refusalMessage({
    permission: undefined,
    operation: undefined,
    kind: "queue",
    name: "amq.gen-q",
    vhost: "/",
    user: "u",
  }, "nova");
  assert.match(line, /^the broker refused access to queue 'amq\.gen-q'/);
  assert.match(line, /needs a permission on it/);
});
