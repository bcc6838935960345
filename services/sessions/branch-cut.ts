import { DomainError, isDomainError, notFound } from '../../domain/errors.js';
import type { ProjectRepos } from '../../infra/git/project-repos.js';
import type { ProjectRecord } from '../../domain/project.js';
import { assertBranchName, assertSha } from '../../domain/refs.js';
import type { Logger } from '../../lib/logger.js';
import type { SecretBox } from '../../infra/secret-box.js';
import { repoCredentials } from '../../infra/git/credentials.js';

/**
 * Cuts the session branch `<session-id>` from the base branch, and answers the base tip
 * it was cut from. Idempotent: a branch that already exists (a retried job) is taken as
 * cut, at its current tip. Two transports:
 *  - GitHub (`https://github.com/<o>/<r>`): read the base tip and create the ref through
 *    the REST API;
 *  - any other repository: the project repository's `createBranch` (a `file://` or
 *    managed one in place, by compare-and-swap from "absent"; a remote by a push with a
 *    lease that the branch does not exist), which runs no hook of the repository.
 */
export interface BranchCutDeps {
  repos: ProjectRepos;
  secrets: SecretBox;
  logger: Logger;
  /** GitHub's REST base (tests point it elsewhere); default https://api.github.com. */
  githubApiUrl?: string;
}

export async function cutSessionBranch(deps: BranchCutDeps, project: ProjectRecord, branch: string, base: string): Promise<string> {
  assertBranchName(branch, 'branch');
  assertBranchName(base, 'base_ref');
  const url = project.repo_url;
  const gh = url ? githubRepo(url) : null;
  if (gh) {
    const creds = repoCredentials(deps.secrets, project);
    return cutOnGitHub({ apiUrl: deps.githubApiUrl ?? 'https://api.github.com', ...gh, token: creds?.password ?? null }, branch, base);
  }
  const repo = deps.repos.for(project);
  try {
    return await repo.createBranch(branch, base);
  } catch (err) {
    if (isDomainError(err) && err.code === 'conflict') {
      const tip = (await repo.readTips([branch]))[branch];
      if (tip) return tip;
    }
    throw err;
  }
}

/** `https://github.com/<owner>/<repo>(.git)` → owner and repo; anything else null. */
export function githubRepo(url: string): { owner: string; repo: string } | null {
  const m = /^https:\/\/github\.com\/([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+?)(?:\.git)?\/?$/i.exec(url);
  return m ? { owner: m[1]!, repo: m[2]! } : null;
}

export async function cutOnGitHub(
  gh: { apiUrl: string; owner: string; repo: string; token: string | null },
  branch: string,
  base: string,
): Promise<string> {
  const api = `${gh.apiUrl.replace(/\/+$/, '')}/repos/${encodeURIComponent(gh.owner)}/${encodeURIComponent(gh.repo)}/git`;
  const headers: Record<string, string> = {
    accept: 'application/vnd.github+json',
    'x-github-api-version': '2022-11-28',
    'user-agent': 'svc',
    ...(gh.token ? { authorization: `Bearer ${gh.token}` } : {}),
  };
  const call = async (method: string, path: string, body?: unknown) => {
    let res: Response;
    try {
      res = await fetch(`${api}${path}`, {
        method,
        headers: body ? { ...headers, 'content-type': 'application/json' } : headers,
        ...(body ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (err) {
      throw new DomainError('unavailable', 'Repository unavailable', `GitHub could not be reached: ${(err as Error).message}`);
    }
    const json = (await res.json().catch(() => null)) as { object?: { sha?: string }; message?: string } | null;
    if (res.status === 401 || res.status === 403) {
      throw new DomainError('unavailable', 'Repository unavailable', `GitHub refused the project's credentials (${res.status}).`);
    }
    return { status: res.status, json };
  };
  const ref = (name: string) => `/ref/heads/${name.split('/').map(encodeURIComponent).join('/')}`;
  const baseRes = await call('GET', ref(base));
  if (baseRes.status === 404) throw notFound(`Branch '${base}'`);
  const sha = baseRes.json?.object?.sha;
  if (baseRes.status !== 200 || typeof sha !== 'string') {
    throw new DomainError('unavailable', 'Repository unavailable', `GitHub answered ${baseRes.status} for the base branch.`);
  }
  assertSha(sha);
  const created = await call('POST', '/refs', { ref: `refs/heads/${branch}`, sha });
  if (created.status === 201) return sha;
  if (created.status === 422 && /already exists/i.test(created.json?.message ?? '')) {
    // A retry of a cut that already happened: the branch is there.
    const existing = await call('GET', ref(branch));
    const tip = existing.json?.object?.sha;
    if (existing.status === 200 && typeof tip === 'string') return assertSha(tip);
  }
  if (created.status === 404) throw notFound('Repository');
  throw new DomainError('unavailable', 'Branch not created', `GitHub answered ${created.status} creating the session branch.`);
}
