import assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import fc from "fast-check";
import {
  type HeaderWarning,
  parseWarningHeader,
  warningMiddleware,
  warningPrinter,
} from "./warnings.ts";

Deno.test("parseWarningHeader: table", () => {
  const w = (text: string, code = 299, agent = "-"): HeaderWarning => ({
    code,
    agent,
    text,
  });
  const rows: [string, HeaderWarning[]][] = [
    ["", []],
    ['299 - "one"', [w("one")]],
    // two headers as fetch joins them, a comma inside the first text
    ['299 - "a, b", 299 - "c"', [w("a, b"), w("c")]],
    [String.raw`299 - "say \"hi\" \\ ok"`, [w('say "hi" \\ ok')]],
    // with a warn-date, and another agent and code
    [
      '299 - "dated" "Sat, 01 Jan 2026 00:00:00 GMT", 199 api.example:443 "misc"',
      [w("dated"), w("misc", 199, "api.example:443")],
    ],
    ['299 - "ok", garbage', [w("ok")]], // the malformed rest is dropped
    ['299 - "unterminated', []],
    ["299 -", []],
    ['29 - "short code"', []],
    [
      'spec.hypervisor: no Hypervisor named "x" exists', // not a header value
      [],
    ],
  ];
  for (const [value, want] of rows) {
    assert.deepEqual(parseWarningHeader(value), want, value);
  }
});

Deno.test("parseWarningHeader: what the API server writes reads back (property)", () => {
  // the API server quotes with Go's strconv-like escaping of " and \
  const quote = (t: string) => `"${t.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
  fc.assert(fc.property(
    fc.array(fc.string({ minLength: 1 }), { minLength: 1, maxLength: 5 }),
    (texts) => {
      const header = texts.map((t) => `299 - ${quote(t)}`).join(", ");
      assert.deepEqual(
        parseWarningHeader(header).map((x) => x.text),
        texts,
      );
    },
  ));
});

Deno.test("warningPrinter: one line per text, once", () => {
  const lines: string[] = [];
  const warn = warningPrinter((l) => lines.push(l));
  warn('spec.hypervisor: no Hypervisor named "x"');
  warn("two\n  lines");
  warn('spec.hypervisor: no Hypervisor named "x"');
  warn("  ");
  assert.deepEqual(lines, [
    'Warning: spec.hypervisor: no Hypervisor named "x"',
    "Warning: two lines",
  ]);
});

Deno.test("warningMiddleware: code 299 warnings of a response, the response unchanged", async () => {
  const texts: string[] = [];
  const m = warningMiddleware((t) => texts.push(t));
  const body = {
    text: () => Promise.resolve(""),
    binary: () => Promise.resolve(new Uint8Array()),
  } as unknown as k8s.ResponseBody;
  const with299 = new k8s.ResponseContext(201, {
    warning: '299 - "a", 199 - "not for people", 299 - "b"',
  }, body);
  assert.equal(await m.post(with299), with299);
  const none = new k8s.ResponseContext(200, {}, body);
  assert.equal(await m.post(none), none);
  assert.deepEqual(texts, ["a", "b"]);
});
