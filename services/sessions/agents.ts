import { notFound, validationError } from '../../domain/errors.js';
import { MANIFEST_PATH, parseManifest } from '../../domain/manifest/parse.js';
import type { ProjectRepos } from '../../infra/git/project-repos.js';
import type { ProjectRecord } from '../../domain/project.js';

/** The agent runtime's (opencode's) own primary agents: there in every project. */
export const BUILTIN_AGENTS = ['build', 'plan'] as const;

const DEFAULT_CONFIG_DIR = '.svc/agent';

/**
 * Refuses (400, `issues` on `agent`) an agent the session could not run: one neither built
 * into the runtime nor defined by the repository at `<[agent] config_dir>/agents/<name>.md`
 * on the base branch's tip, the place the sandbox's runtime will read it from.
 */
export async function assertKnownAgent(repos: ProjectRepos, project: ProjectRecord, baseRef: string, agent: string): Promise<void> {
  if ((BUILTIN_AGENTS as readonly string[]).includes(agent)) return;
  const repo = repos.for(project);
  const tip = (await repo.readTips([baseRef]))[baseRef] ?? null;
  if (!tip) throw notFound(`Branch '${baseRef}'`);
  const manifest = await repo.readFileAt(tip, MANIFEST_PATH);
  const configDir = (manifest && parseManifest(manifest.toString('utf8')).manifest?.agent.config_dir) || DEFAULT_CONFIG_DIR;
  const where = `${configDir.replace(/\/+$/, '')}/agents`;
  const safe = agent.split('/').every((seg) => seg !== '' && seg !== '.' && seg !== '..');
  if (safe && (await repo.readFileAt(tip, `${where}/${agent}.md`))) return;
  const choices = `${BUILTIN_AGENTS.join(', ')} or one defined at ${where}/<name>.md on ${baseRef}`;
  throw validationError(`Unknown agent '${agent}': use ${choices}.`, [{ path: 'agent', message: `unknown agent; use ${choices}` }]);
}
