import { AsyncLocalStorage } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';

/**
 * Timestamps of the steps of one operation (a merge, end to end), for profiling. Off
 * unless `SVC_MERGE_TRACE=1` (each finished trace is then logged at info) or a listener
 * is subscribed (the bench): `traced` runs its function in a trace and `step` marks the
 * current one, from anywhere below it (the trace follows the async context). Off, `step`
 * is one lookup and `traced` calls its function directly.
 */
export interface StepTrace {
  name: string;
  /** `performance.now()` when the trace began. */
  start: number;
  /** Steps in the order they ended: `at` is `performance.now()`. */
  steps: { step: string; at: number }[];
  /** Set when the traced function returned: steps after it (work left in the background) are not counted. */
  done?: boolean;
}

const current = new AsyncLocalStorage<StepTrace>();
const listeners = new Set<(t: StepTrace) => void>();

const tracing = (): boolean => listeners.size > 0 || process.env.SVC_MERGE_TRACE === '1';

/** Marks the end of `name` in the current trace, if any. */
export function step(name: string): void {
  const t = current.getStore();
  if (t && !t.done) t.steps.push({ step: name, at: performance.now() });
}

/**
 * Runs `fn` in a new trace named `name` (when tracing; inside a trace already, in that
 * one) and hands the finished trace to the listeners and `log`. `start` backdates it
 * (a `performance.now()` taken earlier, e.g. when the request arrived).
 */
export async function traced<T>(name: string, fn: () => Promise<T>, opts: { start?: number; log?: (t: StepTrace) => void } = {}): Promise<T> {
  if (!tracing() || current.getStore()) return fn();
  const t: StepTrace = { name, start: opts.start ?? performance.now(), steps: [] };
  try {
    return await current.run(t, fn);
  } finally {
    t.steps.push({ step: 'end', at: performance.now() });
    t.done = true;
    if (process.env.SVC_MERGE_TRACE === '1') opts.log?.(t);
    for (const l of listeners) l(t);
  }
}

/** Subscribes to finished traces (the bench); returns the unsubscribe. */
export function onTrace(listener: (t: StepTrace) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** `{ step: ms since the previous step }`, in order, for a log line or a bench note. */
export function stepDurations(t: StepTrace): [string, number][] {
  let prev = t.start;
  return t.steps.map(({ step: s, at }) => {
    const d: [string, number] = [s, at - prev];
    prev = at;
    return d;
  });
}

/** `step 1.23 ms, next 0.40 ms, ...` */
export const formatSteps = (t: StepTrace): string => stepDurations(t).map(([s, ms]) => `${s} ${ms.toFixed(2)}`).join(', ');
