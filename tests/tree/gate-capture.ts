/**
 * A TarGate that keeps what it delivers, for tests: every member's record in
 * archive order and each regular file's bytes, with the size of every chunk
 * a body received (so tests can check chunking).
 */
import { type GateRecord, TarGate } from "../../src/tree/tar-gate.ts";
import { DEFAULT_LIMITS, type LayerLimits } from "../../src/tree/layer-limits.ts";

export interface Captured {
  readonly gate: TarGate;
  readonly records: GateRecord[];
  /** A regular file's bytes, by ordinal; present only once its body was ended. */
  readonly bodies: Map<number, Buffer>;
  readonly chunkSizes: number[];
}

export function capturingGate(limits: LayerLimits = DEFAULT_LIMITS, where = "/layers/0", collect = false): Captured {
  const records: GateRecord[] = [];
  const bodies = new Map<number, Buffer>();
  const chunkSizes: number[] = [];
  const gate = new TarGate(
    limits,
    { expandedBytes: 0, entries: 0 },
    where,
    (rec) => {
      records.push(rec);
      if (rec.type !== "file") return undefined;
      const parts: Buffer[] = [];
      return {
        write: (c) => {
          chunkSizes.push(c.length);
          parts.push(Buffer.from(c));
        },
        end: () => void bodies.set(rec.ordinal, Buffer.concat(parts)),
      };
    },
    collect,
  );
  return { gate, records, bodies, chunkSizes };
}
