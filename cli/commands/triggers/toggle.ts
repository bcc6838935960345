import type { ChangeRequest } from '../../api-client.js';
import type { Args } from '../../command-table.js';
import { projectContext } from '../../context.js';
import type { Factory } from '../../factory.js';
import { str } from '../../flags.js';
import { printJson } from '../../output.js';
import { crUrl } from '../cr/shared.js';
import { slugTarget, triggersPath } from './shared.js';

export const builder = slugTarget;

/** enable/disable: the server commits the one-line svc.toml change on a branch and opens a CR. */
export const toggle = (verb: 'enable' | 'disable') => async (argv: Args, f: Factory) => {
  const o = { slug: String(argv.slug), project: str(argv.project), host: str(argv.host), json: !!argv.json };
  const ctx = await projectContext(f, { json: o.json, ...(o.host ? { host: o.host } : {}), ...(o.project ? { project: o.project } : {}) });
  const { change_request: cr } = await ctx.api.request<{ change_request: ChangeRequest }>('POST', triggersPath(ctx.projectId, o.slug, `/${verb}`), {});
  if (o.json) return printJson(f.io, cr);
  f.io.err.write(`Opened change request #${cr.number} to ${verb} ${o.slug}; it takes effect when merged (svc cr merge ${cr.number}).\n`);
  f.io.out.write(`${crUrl(f, ctx.host.url, cr)}\n`);
};
