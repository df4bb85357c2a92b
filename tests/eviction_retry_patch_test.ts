/**
 * The retry annotation is removed by a JSON patch guarded by a test of the
 * value the pass applied, against the real API server: the applied request
 * is removed; a newer one, set during the pass, makes the patch fail and
 * stays (the upstream-style merge patch would have dropped it).
 */
import assert from "node:assert/strict";
import { ApiError } from "../framework/errors.ts";
import { KubeClient } from "../framework/client.ts";
import { EvictionKind } from "../controllers/kinds.ts";
import {
  RETRY_ANNOTATION,
  retryRemovalPatch,
} from "../controllers/eviction/retry.ts";
import type { Eviction } from "../models/mod.ts";
import { sharedEnvtest } from "./harness/envtest.ts";
import { uniqueSuffix } from "./harness/eviction_env.ts";

Deno.test({
  name: "retry annotation: removed only while it holds the applied request",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const env = await sharedEnvtest();
    const client = await KubeClient.fromKubeConfig(env.kubeConfig());
    const name = `retry-patch-${uniqueSuffix()}`;
    try {
      await client.create<Eviction>(EvictionKind, {
        metadata: { name, annotations: { [RETRY_ANNOTATION]: "a" } },
        spec: { hypervisor: name, reason: "test" },
      });
      // A newer request ("b") came while the pass applied "a": kept.
      await client.patch(EvictionKind, name, {
        metadata: { annotations: { [RETRY_ANNOTATION]: "b" } },
      });
      const err = await client.patch(
        EvictionKind,
        name,
        retryRemovalPatch("a"),
        "json",
      ).then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof ApiError, String(err));
      assert.equal(err.status, 422);
      let ev = await client.get<Eviction>(EvictionKind, name);
      assert.equal(ev.metadata?.annotations?.[RETRY_ANNOTATION], "b");
      // The request the pass applied is removed.
      await client.patch(EvictionKind, name, retryRemovalPatch("b"), "json");
      ev = await client.get<Eviction>(EvictionKind, name);
      assert.equal(ev.metadata?.annotations?.[RETRY_ANNOTATION], undefined);
    } finally {
      await client.delete(EvictionKind, name).catch(() => {});
      client.close();
    }
  },
});
