import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import type { Factory } from '../../factory.js';
import { ApiError, UsageError } from '../../errors.js';
import { str } from '../../flags.js';
import { printJson } from '../../output.js';
import { sessionsApi, type NewSessionInput, type Session } from '../../sessions-api.js';
import type { ProjectContext } from '../../context.js';
import { ctxOf, waitRunning, withTarget } from './shared.js';

export const sessionFlags = (y: Argv) =>
  y
    .option('prompt', { type: 'string', requiresArg: true, describe: 'First prompt for the agent' })
    .option('agent', { type: 'string', requiresArg: true, describe: 'Agent to run: build, plan or one the repo defines (default: build)' })
    .option('model', { type: 'string', requiresArg: true, describe: 'Model for the agent' })
    .option('base', { type: 'string', requiresArg: true, describe: 'Branch to start from (default: the project’s default branch)' });

export const builder = (y: Argv) => withTarget(sessionFlags(y).option('wait', { type: 'boolean', default: true, describe: 'Wait until its agent is ready (--no-wait: print the id at once)' }));

export const inputOf = (argv: Args): NewSessionInput => {
  const out: NewSessionInput = {};
  if (argv.prompt !== undefined) out.prompt = String(argv.prompt);
  if (argv.agent !== undefined) out.agent = String(argv.agent);
  if (argv.model !== undefined) out.model = String(argv.model);
  if (argv.base !== undefined) out.base_ref = String(argv.base);
  return out;
};

export const handler = (argv: Args, f: Factory) =>
  run(f, { input: inputOf(argv), wait: argv.wait !== false, project: str(argv.project), host: str(argv.host), json: !!argv.json });

/** An agent the server refuses (not built in, not in the repo) is a bad flag value: exit 2, naming the choices. */
async function create(ctx: ProjectContext, input: NewSessionInput): Promise<Session> {
  try {
    return await sessionsApi(ctx.api).create(ctx.projectId, input);
  } catch (err) {
    const issues = err instanceof ApiError && err.status === 400 && Array.isArray(err.body.issues) ? (err.body.issues as { path?: unknown; message?: unknown }[]) : [];
    const first = issues.find((i) => i?.path === 'agent');
    if (!first) throw err;
    // A validator's answer joins every issue ("agent: a; agent: b"): one line names the first.
    // A sentence the server wrote itself (the unknown agent, naming the choices) is kept.
    const joined = issues.map((i) => `${String(i?.path)}: ${String(i?.message)}`).join('; ');
    throw new UsageError(`--agent: ${(err as ApiError).message === joined ? String(first.message) : (err as ApiError).message}`);
  }
}

/** Creates a session and waits (spinner on stderr) until it runs; prints its id. */
export async function createRunning(f: Factory, ctx: ProjectContext, input: NewSessionInput, json: boolean): Promise<Session> {
  const created = await create(ctx, input);
  if (!json) f.io.err.write(`Created session ${created.session_id}\n`);
  return waitRunning(f, ctx, created.session_id, { quiet: json });
}

export async function run(f: Factory, o: { input: NewSessionInput; wait: boolean; project?: string; host?: string; json: boolean }): Promise<void> {
  const ctx = await ctxOf(f, o);
  const s = o.wait ? await createRunning(f, ctx, o.input, o.json) : await create(ctx, o.input);
  if (o.json) return printJson(f.io, s);
  f.io.out.write(`${s.session_id}\n`);
}
