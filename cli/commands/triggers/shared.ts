import type { Argv } from 'yargs';
import { withHost, withJson, withProject } from '../../flags.js';

export interface Trigger {
  slug: string;
  schedule: string;
  prompt: string;
  agent: string | null;
  model: string | null;
  enabled: boolean;
  last_fired_at: string | null;
  next_fire_at: string | null;
  fires?: Array<{ tick: string; kind: string; outcome: string; session_id: string | null; fired_at: string }>;
}

export const triggersPath = (project: string, slug?: string, tail = '') =>
  `/projects/${encodeURIComponent(project)}/triggers${slug === undefined ? '' : `/${encodeURIComponent(slug)}${tail}`}`;

export const slugTarget = (y: Argv) => withJson(withHost(withProject(y.positional('slug', { type: 'string', describe: 'Trigger slug' }))));
