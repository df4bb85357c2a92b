/**
 * The notification broker's URL (`amqp://user:password@host:port/vhost`):
 * checked, and kept out of every message (it carries a password).
 *
 * @module
 */

/**
 * Checks a notification URL: `amqp://` or `amqps://` with a host. The error
 * names the scheme or the part that is wrong, never the URL (it may hold a
 * password).
 *
 * @example
 * ```ts
 * import { validateAmqpUrl } from "./amqp_url.ts";
 * validateAmqpUrl("amqp://nova:secret@rabbit:5672/");
 * ```
 */
export function validateAmqpUrl(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new TypeError(
      "the notification URL is not a URL: expected amqp://user:password@host:port/vhost or amqps://...",
    );
  }
  if (parsed.protocol !== "amqp:" && parsed.protocol !== "amqps:") {
    throw new TypeError(
      `the notification URL must start with amqp:// or amqps://, got scheme "${
        parsed.protocol.replace(/:$/, "")
      }"`,
    );
  }
  if (parsed.hostname === "") {
    throw new TypeError("the notification URL has no host");
  }
  return parsed;
}

/**
 * The URL with its password replaced by `***` (for messages that must say
 * which broker), or `(invalid URL)`.
 *
 * @example
 * ```ts
 * import { redactAmqpUrl } from "./amqp_url.ts";
 * console.log(redactAmqpUrl("amqp://nova:secret@rabbit:5672/")); // amqp://nova:***@rabbit:5672/
 * ```
 */
export function redactAmqpUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== "") u.password = "***";
    return u.toString();
  } catch {
    return "(invalid URL)";
  }
}

/**
 * An error's text with the URL and its password (raw and percent-decoded)
 * replaced by `***`.
 *
 * @example
 * ```ts
 * import { redactedError } from "./amqp_url.ts";
 * const url = "amqp://nova:s3cret@rabbit/";
 * console.log(redactedError(new Error("auth s3cret refused"), url)); // auth *** refused
 * ```
 */
export function redactedError(err: unknown, url: string): string {
  let text = err instanceof Error ? err.message : String(err);
  const secrets = [url, redactAmqpUrl(url)];
  try {
    const u = new URL(url);
    secrets.push(u.password, decodeURIComponent(u.password));
  } catch {
    // Nothing more to hide than the text itself.
  }
  for (const s of secrets) {
    if (s.length > 0) text = text.replaceAll(s, "***");
  }
  return text;
}
