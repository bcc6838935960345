/**
 * One row of `npm run bench`. A row compares the thing measured with its floor (raw git,
 * a direct connection) measured in the same run, so the ratio means something on any
 * machine.
 */
export interface BenchRow {
  /** Which part: 'events', 'git', 'api', 'agentd', 'cli'. */
  suite: string;
  /** What was measured, e.g. 'preview (merge-ort engine)'. */
  name: string;
  value: number;
  unit: string; // 'ms', 'ops/s', 'events/s', ...
  /** Same work done by the floor in the same run, when there is one. */
  floor?: number;
  /** value / floor, or floor / value: whichever reads as "x times the floor". */
  ratio?: number;
  /** The target, as text: '<= 1.2x floor', '>= 3000 ops/s'. */
  goal?: string;
  /** Whether the goal was met, when there is a goal. */
  met?: boolean;
  notes?: string;
}

/** A bench module exports `run` and is listed in bench/run.ts. */
export type BenchSuite = (opts: { quick: boolean }) => Promise<BenchRow[]>;

export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export function percentile(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const idx = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[idx]!;
}

/** Times `fn` `n` times (after `warmup` untimed runs), returns milliseconds per run. */
export async function timeRuns(n: number, fn: () => Promise<unknown>, warmup = 2): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await fn();
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = process.hrtime.bigint();
    await fn();
    out.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return out;
}
