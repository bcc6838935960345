import type { Argv } from 'yargs';
import type { MergeQueueJson } from '../../../contracts/merge-queue.js';
import type { Args } from '../../command-table.js';
import { projectContext } from '../../context.js';
import type { Factory } from '../../factory.js';
import { str, withHost, withJson, withProject } from '../../flags.js';
import { colors, formatTime, printJson, printTable, shortSha } from '../../output.js';

export const queuePath = (project: string, tail = '') => `/projects/${encodeURIComponent(project)}/merge-queue${tail}`;

export const builder = (y: Argv) =>
  withJson(withHost(withProject(y.option('base', { type: 'string', describe: "Base branch (default: the project's default branch)", requiresArg: true }))));
export const handler = (argv: Args, f: Factory) => run(f, { base: str(argv.base), project: str(argv.project), host: str(argv.host), json: !!argv.json });

/** `svc queue ls`: a base branch's merge queue in order, each CR's speculative result and checks; then the latest to leave and why. */
export async function run(f: Factory, o: { base?: string | undefined; project?: string | undefined; host?: string | undefined; json: boolean }): Promise<void> {
  const ctx = await projectContext(f, { json: o.json, ...(o.host ? { host: o.host } : {}), ...(o.project ? { project: o.project } : {}) });
  const { merge_queue: q } = await ctx.api.request<{ merge_queue: MergeQueueJson }>('GET', queuePath(ctx.projectId, o.base ? `?base=${encodeURIComponent(o.base)}` : ''));
  if (o.json) return printJson(f.io, q);
  f.io.err.write(`Merge queue of ${q.base_ref}: ${q.state}${q.enabled ? '' : ' ([merge_queue] enabled = true in svc.toml turns it on)'}, up to ${q.max_batch} checked at once\n`);
  const c = colors(f.io, f.env);
  if (q.entries.length === 0) f.io.err.write('Nothing waits.\n');
  else {
    printTable(
      f.io,
      ['#', 'cr', 'state', 'head', 'result', 'checks', 'queued'],
      q.entries.map((e) => [
        String(e.position),
        `#${e.number} ${e.title}`,
        f.io.stdoutIsTTY && e.state === 'failed' ? c.red(e.state) : e.state,
        shortSha(e.head_sha),
        e.speculative_sha ? shortSha(e.speculative_sha) : '',
        e.runs.map((r) => `${r.name}:${r.status}`).join(' '),
        formatTime(f.io, e.queued_at, f.now()),
      ]),
      c,
    );
  }
  if (q.recent.length) {
    f.io.out.write('\nrecently left:\n');
    for (const l of q.recent.slice(0, 10)) f.io.out.write(`  #${l.number}\t${l.outcome}${l.context ? ` (${l.context})` : ''}\t${formatTime(f.io, l.at, f.now())}\n`);
  }
}
