import type { Config } from '../../infra/config.js';
import type { Db } from '../../infra/db/db.js';
import type { SecretBox } from '../../infra/secret-box.js';
import { checkRepoUrl, repoUrlPolicy } from '../../infra/git/url-policy.js';
import { reposDirOf } from '../../infra/git/managed-repo.js';
import type { ProjectRecord } from '../../domain/project.js';
import { assertRepoReachable, createProject } from './service.js';

export interface OpenProjectDeps {
  db: Db;
  secrets: SecretBox;
  config: Config;
}

/** `POST /v1/projects` as the caller asked it (the contract's body, validated). */
export interface OpenProjectInput {
  userId: string;
  accountId?: string | undefined;
  name: string;
  slug?: string | undefined;
  /** Absent: a managed repository, hosted here. */
  repoUrl?: string | undefined;
  defaultBranch?: string | undefined;
  /** Where this server's managed repositories are served from (the route's `publicBaseUrl`). */
  gitBase: string;
}

const slugify = (name: string) =>
  name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 50) || 'project';

/**
 * `https://user:token@host/repo` is accepted for convenience: the credentials are split
 * off and sealed; the stored and returned URL never carries them.
 */
function splitCredentials(raw: string): { url: string; credentials: { username: string; password: string } | null } {
  if (!/^https?:\/\//i.test(raw)) return { url: raw, credentials: null };
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return { url: raw, credentials: null };
  }
  if (!u.username && !u.password) return { url: raw, credentials: null };
  const credentials = { username: decodeURIComponent(u.username), password: decodeURIComponent(u.password) };
  u.username = '';
  u.password = '';
  return { url: u.toString(), credentials };
}

/**
 * A new project: a remote's URL passes the URL policy and answers before the project
 * exists, its credentials are sealed; no URL makes a managed repository.
 */
export async function openProject(deps: OpenProjectDeps, input: OpenProjectInput): Promise<ProjectRecord> {
  const managed = !input.repoUrl;
  const { url, credentials } = managed ? { url: '', credentials: null } : splitCredentials(input.repoUrl!);
  const defaultBranch = input.defaultBranch ?? 'main';
  if (!managed) {
    const target = await checkRepoUrl(url, repoUrlPolicy(deps.config), { hasCredentials: credentials !== null });
    await assertRepoReachable({
      url,
      credentials,
      target,
      allowHttpCredentials: deps.config.SVC_REPO_ALLOW_HTTP_CREDENTIALS,
      defaultBranch,
      timeoutMs: deps.config.SVC_REPO_CHECK_TIMEOUT_MS,
    });
  }
  return createProject(
    { db: deps.db, reposDir: reposDirOf(deps.config) },
    {
      userId: input.userId,
      ...(input.accountId !== undefined ? { accountId: input.accountId } : {}),
      name: input.name,
      ...(input.slug !== undefined ? { slug: input.slug } : {}),
      derivedSlug: slugify(input.name),
      repoUrl: url,
      repoCredentialsEnc: credentials ? deps.secrets.seal(JSON.stringify(credentials)) : null,
      defaultBranch,
      managed,
      gitBase: managed ? input.gitBase : '',
    },
  );
}
