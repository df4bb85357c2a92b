import assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { z } from "zod";
import { ConfigError, UnavailableError } from "../openstack/mod.ts";
import { errorLine } from "./error_line.ts";
import { ApiServerUnreachableError, KubeconfigError } from "./kube_config.ts";
import {
  UnknownHypervisorsError,
  unknownHypervisorsMessage,
} from "./hypervisor_names.ts";
import { UsageError } from "./usage.ts";
import { JsonPathError } from "./jsonpath.ts";
import { WatchRefusedError } from "./eviction_watch.ts";

Deno.test("errorLine: one line and an exit code for every kind of failure", () => {
  const zod = z.object({ spec: z.object({ hypervisor: z.string() }) })
    .safeParse({ spec: {} }).error;
  const rows: [unknown, number, RegExp][] = [
    [
      new UsageError("drain needs a HYPERVISOR name", "drain"),
      1, // kubectl's exit code for a usage mistake
      /^error: drain needs a HYPERVISOR name \(see "kubectl evictor drain --help"\)$/,
    ],
    [
      new UsageError('unknown command "x"'),
      1,
      /\(see "kubectl evictor --help"\)$/,
    ],
    [
      new k8s.ApiException(
        403,
        "Forbidden",
        JSON.stringify({ message: "evictions is forbidden:\nno" }),
        {},
      ),
      1,
      /^error: evictions is forbidden: no$/,
    ],
    [
      new k8s.ApiException(500, "", "not json", {}),
      1,
      /^error: the API server answered 500$/,
    ],
    [
      new UnavailableError("HTTP 406: Version 2.99 is not supported", {
        requestId: "req-1",
      }),
      1,
      /^error: OpenStack: HTTP 406: Version 2\.99 is not supported \(request req-1\)$/,
    ],
    [
      new ConfigError(
        'OS_COMPUTE_API_VERSION: "2.1" is not usable; expected ...',
      ),
      1,
      /^error: OS_COMPUTE_API_VERSION: "2\.1" is not usable/,
    ],
    [
      new KubeconfigError(
        "kubeconfig /x has no current-context; expected one of: a",
      ),
      1,
      /^error: kubeconfig \/x has no current-context/,
    ],
    [
      new ApiServerUnreachableError(
        "cannot reach the API server https://k:6443",
      ),
      1,
      /^error: cannot reach the API server/,
    ],
    [
      zod,
      1,
      /^error: the API server sent an object this plugin cannot read \(a newer CRD\?\): spec\.hypervisor: /,
    ],
    [
      new TypeError("fetch failed", {
        cause: new Error("connection reset\n  at x"),
      }),
      1,
      /^error: fetch failed: connection reset$/,
    ],
    [
      new UnknownHypervisorsError(
        unknownHypervisorsMessage(["nod042"], ["node042"]),
      ),
      1,
      /^error: no Hypervisor named "nod042" \(did you mean node042\?\): nothing created;/,
    ],
    [
      new JsonPathError(
        '"{.items[5]}": array index out of bounds: index 5, length 2',
      ),
      1,
      /^error: "\{\.items\[5\]\}": array index out of bounds: index 5, length 2$/,
    ],
    [
      new WatchRefusedError(
        "cannot watch evictions.kvm.cloud.sap: the API server answered 403 (the user needs the watch verb on them)",
      ),
      1,
      /^error: cannot watch evictions\.kvm\.cloud\.sap: the API server answered 403/,
    ],
    ["a string", 1, /^error: a string$/],
  ];
  for (const [e, code, line] of rows) {
    const got = errorLine(e);
    assert.equal(got.code, code, String(e));
    assert.match(got.line, line);
    assert.doesNotMatch(got.line, /\n/);
    // never a class name, whatever was thrown
    if (e instanceof Error) {
      assert.ok(!got.line.includes(e.constructor.name), got.line);
      assert.ok(!got.line.includes(e.name), got.line);
    }
  }
});
