/** Pieces the `svc cr` commands share. */
import type { Argv } from 'yargs';
import type { ChangeRequest } from '../../api-client.js';
import { dashboardUrl } from '../../context.js';
import type { Factory } from '../../factory.js';
import { withHost, withJson, withProject } from '../../flags.js';

export const crTarget = (y: Argv) =>
  withJson(withHost(withProject(y.positional('cr', { type: 'string', describe: 'Change request: number (3, #3) or cr_id' }))));

export function crUrl(f: Factory, hostUrl: string, cr: ChangeRequest): string {
  return `${dashboardUrl(f, hostUrl)}/projects/${cr.project_id}/change-requests/${cr.number}`;
}
