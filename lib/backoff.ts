/**
 * The one formula for how long to wait before trying again: an exponential step with a
 * cap, spread by jitter so that processes that failed together do not retry together.
 * Used by the periodic jobs' supervisor (workers/supervisor.ts), the merge lock's waits,
 * the command handler's retries after a concurrent append, the queue's start-up races,
 * the mirror's fetch retries, the channel dispatcher and the sandbox daemon's restarts.
 */

/**
 * `base` ± `spread` of it, never negative, in whole milliseconds: 0.1 is ±10 %; 1 is
 * anywhere from 0 to twice `base` ("full jitter" over 2·base).
 */
export function jittered(base: number, spread: number, random: () => number = Math.random): number {
  return Math.max(0, Math.round(base * (1 + spread * (2 * random() - 1))));
}

/** `base` doubled `attempt` times (attempt 0: `base`), at most `max`. */
export function exponential(base: number, attempt: number, max: number): number {
  return Math.min(max, base * 2 ** Math.min(Math.max(0, attempt), 30));
}
