/** Pieces the `svc cr` commands share. */
import type { Argv } from 'yargs';
import type { ChangeRequest } from '../../api-client.js';
import type { Args } from '../../command-table.js';
import { dashboardUrl, parseCrRef, projectContext } from '../../context.js';
import type { Factory } from '../../factory.js';
import { str, withHost, withJson, withProject } from '../../flags.js';

export const crTarget = (y: Argv) =>
  withJson(withHost(withProject(y.positional('cr', { type: 'string', describe: 'Change request: number (3, #3) or cr_id' }))));

export function crUrl(f: Factory, hostUrl: string, cr: ChangeRequest): string {
  return `${dashboardUrl(f, hostUrl)}/projects/${cr.project_id}/change-requests/${cr.number}`;
}

/** The options of a command that reads one CR (`svc cr show|checks|comments <cr>`). */
export interface CrTargetOptions {
  f: Factory;
  cr: string;
  project?: string;
  host?: string;
  json: boolean;
}

export const crTargetOptions = (argv: Args, f: Factory): CrTargetOptions => ({ f, cr: String(argv.cr), project: str(argv.project), host: str(argv.host), json: !!argv.json });

/** The CR reference checked and the project context opened (host, token, project). */
export async function openCrTarget({ f, cr, project, host, json }: CrTargetOptions) {
  const crId = parseCrRef(cr);
  const ctx = await projectContext(f, { json, ...(host ? { host } : {}), ...(project ? { project } : {}) });
  return { crId, ctx };
}
