import assert from "node:assert/strict";
import { redactAmqpUrl, redactedError, validateAmqpUrl } from "./amqp_url.ts";

Deno.test("validateAmqpUrl: amqp or amqps with a host; errors never show the URL", () => {
  for (const ok of ["amqp://u:p@h:5672/", "amqps://h/vhost", "amqp://h"]) {
    validateAmqpUrl(ok);
  }
  const table: [string, RegExp][] = [
    [
      "http://u:secret@h/",
      /must start with amqp:\/\/ or amqps:\/\/, got scheme "http"/,
    ],
    ["rabbit://u:secret@h/", /got scheme "rabbit"/],
    ["not a url secret", /is not a URL/],
    ["amqp://", /is not a URL|has no host/],
  ];
  for (const [url, want] of table) {
    assert.throws(() => validateAmqpUrl(url), (e: Error) => {
      assert.match(e.message, want);
      assert.ok(!e.message.includes("secret"), e.message);
      return true;
    });
  }
});

Deno.test("redaction: the password never survives", () => {
  assert.equal(
    redactAmqpUrl("amqp://nova:s3cr%40t@rabbit:5672/v"),
    "amqp://nova:***@rabbit:5672/v",
  );
  assert.equal(redactAmqpUrl("amqp://rabbit/"), "amqp://rabbit/");
  assert.equal(redactAmqpUrl("::"), "(invalid URL)");
  const url = "amqp://nova:s3cr%40t@rabbit:5672/";
  for (
    const text of [
      `connect to ${url} failed`,
      "ACCESS_REFUSED for password s3cr@t",
      "ACCESS_REFUSED for password s3cr%40t",
    ]
  ) {
    const out = redactedError(new Error(text), url);
    assert.ok(!out.includes("s3cr"), out);
  }
});
