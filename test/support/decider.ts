import { expect } from 'chai';
import { DomainError, type ErrorCode } from '../../domain/errors.js';

/** The actor and clock every decider spec's commands carry, and that clock as its events record it. */
export const actor = '00000000-0000-4000-8000-00000000000a';
export const now = new Date('2026-01-02T03:04:05.000Z');
export const at = now.toISOString();
export const meta = { actor, now };

/**
 * `given(events).when(command).then(events)` / `.thenThrows(code)`: decider tests that
 * read as the spec's state table.
 */
export function specFor<S, E, C>(decider: { decide: (c: C, s: S) => E[]; evolve: (s: S, e: E) => S; initial: S }) {
  return (given: E[]) => ({
    when: (command: C) => {
      const run = () => decider.decide(command, given.reduce(decider.evolve, decider.initial));
      return {
        then(expected: E[] | ((events: E[]) => void)) {
          const events = run();
          if (typeof expected === 'function') expected(events);
          else expect(events).to.deep.equal(expected);
        },
        thenThrows(code: ErrorCode, message?: RegExp) {
          let caught: unknown;
          try {
            run();
          } catch (err) {
            caught = err;
          }
          expect(caught, 'expected the command to be refused').to.be.instanceOf(DomainError);
          expect((caught as DomainError).code).to.equal(code);
          if (message) expect((caught as DomainError).message).to.match(message);
        },
      };
    },
  });
}
