import type { GitEngine } from './port.js';
import { OrtEngine } from './engine-ort.js';
import { Libgit2Engine, tryLoadNodeGit } from './engine-libgit2.js';

export type EngineName = 'git' | 'libgit2';

export class EngineUnavailableError extends Error {
  constructor(readonly engine: EngineName, reason: string) {
    super(`git engine '${engine}' is not available: ${reason}`);
    this.name = 'EngineUnavailableError';
  }
}

/**
 * Picks the engine named by config (`SVC_GIT_ENGINE`). libgit2 needs the optional
 * `nodegit` package; asking for it without nodegit installed is a startup error, not a
 * silent fallback to the other engine.
 */
export async function createEngine(name: EngineName = 'git'): Promise<GitEngine> {
  switch (name) {
    case 'git':
      return new OrtEngine();
    case 'libgit2': {
      const g = await tryLoadNodeGit();
      if (!g.nodegit) {
        throw new EngineUnavailableError(
          'libgit2',
          `the optional dependency 'nodegit' is not usable (${g.reason}); set SVC_GIT_ENGINE=git, or install nodegit`,
        );
      }
      return new Libgit2Engine(g.nodegit);
    }
    default: {
      const never: never = name;
      throw new EngineUnavailableError(never, 'unknown engine name (expected git or libgit2)');
    }
  }
}
