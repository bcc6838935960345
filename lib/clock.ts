/**
 * Where the server reads the time. Two clocks, for two different questions:
 *
 * - **Wall-clock time** ("when did this happen", "has this expired"): a `Clock`. It is
 *   what events, rows, cookies and git objects carry, and what tests replace, so it comes
 *   in with the dependencies (`deps.now`, a `Clock`'s `now`) and is read through `nowOf`.
 *   Nothing in services/, infra/, workers/ or projections/ reads it any other way
 *   (`test/unit/house/clock.unit.spec.ts`).
 * - **Durations and deadlines** ("has this wait lasted 5 s", "how long did the fetch
 *   take"): `performance.now()`, monotonic, so a wall-clock step (NTP, a suspended VM)
 *   never ends a wait early or stretches it, and no test needs to move it.
 */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/**
 * The time of the clock in `deps` (`now`: what the wiring or a test injected), else the
 * system's. Every dependency object that carries a clock carries it as `now`.
 */
export const nowOf = (deps: { now?: (() => Date) | undefined } = {}): Date => (deps.now ?? systemClock.now)();

/** `nowOf` in milliseconds since the epoch. */
export const epochMsOf = (deps?: { now?: (() => Date) | undefined }): number => nowOf(deps).getTime();

/** A clock a test sets and moves by hand. */
export interface ManualClock extends Clock {
  set(at: Date | string | number): void;
  advance(ms: number): void;
}

export function manualClock(start: Date | string | number): ManualClock {
  let at = new Date(start).getTime();
  return {
    now: () => new Date(at),
    set: (t) => {
      at = new Date(t).getTime();
    },
    advance: (ms) => {
      at += ms;
    },
  };
}
