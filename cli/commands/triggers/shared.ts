import type { Argv } from 'yargs';
import { withHost, withJson, withProject } from '../../flags.js';

import type { Trigger as TriggerJson, TriggerDetail } from '../../../contracts/manifest.js';

/** A trigger as listed, or as shown alone (with its recent fires). */
export type Trigger = TriggerJson & Partial<Pick<TriggerDetail, 'fires'>>;

export const triggersPath = (project: string, slug?: string, tail = '') =>
  `/projects/${encodeURIComponent(project)}/triggers${slug === undefined ? '' : `/${encodeURIComponent(slug)}${tail}`}`;

export const slugTarget = (y: Argv) => withJson(withHost(withProject(y.positional('slug', { type: 'string', describe: 'Trigger slug' }))));
