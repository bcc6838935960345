import type { GitEngine } from '../../../infra/git/port.js';
import { createEngine, EngineUnavailableError, type EngineName } from '../../../infra/git/engine.js';

export interface EngineUnderTest {
  name: EngineName;
  engine: GitEngine | null;
  /** Why the engine could not be created (libgit2 without nodegit). */
  missing?: string;
}

/** Both engines; libgit2 may be missing when the optional nodegit did not install. */
export async function enginesUnderTest(): Promise<EngineUnderTest[]> {
  const out: EngineUnderTest[] = [];
  for (const name of ['git', 'libgit2'] as const) {
    try {
      out.push({ name, engine: await createEngine(name) });
    } catch (e) {
      if (!(e instanceof EngineUnavailableError)) throw e;
      out.push({ name, engine: null, missing: e.message });
    }
  }
  return out;
}

/**
 * Declares the suite for each engine. A missing libgit2 engine is a failing test in CI;
 * elsewhere it shows up as a suite whose title says so, with one test that checks the
 * factory's refusal is explicit.
 */
export function forEachEngine(engines: EngineUnderTest[], title: string, body: (engine: GitEngine) => void): void {
  for (const e of engines) {
    if (e.engine) {
      const engine = e.engine;
      describe(`${title} [engine: ${e.name}]`, () => body(engine));
      continue;
    }
    if (process.env.CI) {
      describe(`${title} [engine: ${e.name}]`, () => {
        it(`requires the ${e.name} engine in CI`, () => {
          throw new Error(`${e.missing} — CI must build nodegit so the libgit2 conformance suite runs`);
        });
      });
    } else {
      describe(`${title} [engine: ${e.name}] NOT RUN: nodegit is not installed (CI=1 makes this a failure)`, () => {
        it('createEngine refuses clearly instead of falling back', async () => {
          let err: unknown;
          try {
            await createEngine(e.name);
          } catch (x) {
            err = x;
          }
          if (!(err instanceof EngineUnavailableError) || !/nodegit/.test(err.message)) {
            throw new Error('expected EngineUnavailableError naming nodegit');
          }
        });
      });
    }
  }
}
