import assert from "node:assert/strict";
import { copyCells, copyRows, formatBytes } from "./copy_progress.ts";

const NOW = Date.parse("2026-12-07T10:00:00Z");
const GiB = 1024 ** 3;

Deno.test("copyCells: progress, rate, ETA, convergence and deadline; absent fields are -", () => {
  const rows: [string, Record<string, unknown>, string[]][] = [
    [
      "every field",
      {
        id: "vm-a",
        kind: "live",
        startedAt: "2026-12-07T09:50:00Z",
        memoryTotalBytes: 512 * GiB,
        memoryRemainingBytes: 128 * GiB,
        bytesPerSecond: 1.5 * GiB,
        etaSeconds: 85,
        notConverging: false,
        deadlineAt: "2026-12-07T10:04:05Z",
      },
      [
        "n1",
        "vm-a",
        "live",
        "10m",
        "75%",
        "128.0 GiB of 512.0 GiB",
        "1.5 GiB/s",
        "1m25s",
        "yes",
        "in 4m05s",
      ],
    ],
    [
      "only what classify.ts reads (memoryProcessedPercent)",
      {
        id: "vm-b",
        kind: "live",
        startedAt: "2026-12-07T09:59:30Z",
        memoryProcessedPercent: 40,
      },
      ["n1", "vm-b", "live", "30s", "40%", "-", "-", "-", "-", "-"],
    ],
    [
      "not converging, past its deadline, force-completed",
      {
        id: "vm-c",
        kind: "live",
        memoryTotalBytes: 2 * GiB,
        memoryRemainingBytes: 3 * GiB, // dirtied more than its size
        notConverging: true,
        deadlineAt: "2026-12-07T09:58:00Z",
        forceCompleteSentAt: "2026-12-07T09:58:01Z",
      },
      [
        "n1",
        "vm-c",
        "live",
        "-",
        "0%",
        "3.0 GiB of 2.0 GiB",
        "-",
        "-",
        "no (force-completed)",
        "2m00s ago",
      ],
    ],
    [
      "a cold migration with nothing known",
      { id: "vm-d", kind: "cold", memoryRemainingBytes: 512 },
      ["n1", "vm-d", "cold", "-", "-", "512 B", "-", "-", "-", "-"],
    ],
    [
      "nonsense values are -",
      {
        id: "vm-e",
        memoryTotalBytes: -1,
        bytesPerSecond: "fast",
        notConverging: "yes",
        deadlineAt: "soon",
      },
      ["n1", "vm-e", "-", "-", "-", "-", "-", "-", "-", "-"],
    ],
  ];
  for (const [what, f, want] of rows) {
    assert.deepEqual(copyCells("n1", f, NOW), want, what);
  }
});

Deno.test("copyRows: every copy of every Eviction, by Eviction then VM", () => {
  const raws = [
    {
      metadata: { name: "n2" },
      status: { inFlight: [{ id: "b" }, { id: "a" }] },
    },
    { metadata: { name: "n1" }, status: { inFlight: [{ id: "z" }] } },
    { metadata: { name: "n3" } },
  ];
  assert.deepEqual(
    copyRows(raws, NOW).slice(1).map((r) => `${r[0]}/${r[1]}`),
    ["n1/z", "n2/a", "n2/b"],
  );
  assert.equal(copyRows([{ metadata: { name: "n3" } }], NOW).length, 1);
});

Deno.test("formatBytes: binary units", () => {
  assert.equal(formatBytes(0), "0 B");
  assert.equal(formatBytes(1023), "1023 B");
  assert.equal(formatBytes(1024), "1.0 KiB");
  assert.equal(formatBytes(1.25 * 1024 ** 4), "1.3 TiB");
});
