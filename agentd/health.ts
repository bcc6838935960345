import type { AgentState } from './supervisor.js';
import { repoStatus, type RepoStatus } from './repo.js';

export interface HealthBody {
  daemon: 'ok';
  agent: AgentState;
  repo: string | null;
  branch: string | null;
  commit: string | null;
}

/**
 * `GET /svc/health`. The branch and commit are read from the checkout (the agent
 * commits as it works), at most once a second so a polling dashboard costs no git
 * process per request.
 */
export class Health {
  private cached: { at: number; status: Promise<RepoStatus> } | undefined;

  constructor(
    private readonly deps: {
      workspace: string;
      repo: string | null;
      branchHint: string | undefined;
      agentState: () => AgentState;
      /** False while the boot clone runs: the checkout is half-made until then. */
      repoReady: () => boolean;
      ttlMs?: number;
    },
  ) {}

  invalidate(): void {
    this.cached = undefined;
  }

  async body(): Promise<HealthBody> {
    const now = Date.now();
    if (!this.cached || now - this.cached.at > (this.deps.ttlMs ?? 1_000)) {
      this.cached = { at: now, status: repoStatus(this.deps.workspace).catch(() => ({ branch: null, commit: null })) };
    }
    const status = this.deps.repoReady() ? await this.cached.status : { branch: null, commit: null };
    return {
      daemon: 'ok',
      agent: this.deps.agentState(),
      repo: this.deps.repo,
      branch: status.branch ?? this.deps.branchHint ?? null,
      commit: status.commit,
    };
  }
}
