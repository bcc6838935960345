/** Pieces the `svc sessions` commands share. */
import type { Argv } from 'yargs';
import { dashboardUrl, projectContext, type ProjectContext } from '../../context.js';
import { CliError } from '../../errors.js';
import type { Factory } from '../../factory.js';
import { withHost, withJson, withProject } from '../../flags.js';
import type { Colors } from '../../output.js';
import { sessionsApi, type Session } from '../../sessions-api.js';

export const withTarget = (y: Argv) => withJson(withHost(withProject(y)));
export const sessionArg = (y: Argv) => y.positional('id', { type: 'string', describe: 'Session id' });

export async function ctxOf(f: Factory, o: { project?: string; host?: string; json?: boolean }): Promise<ProjectContext> {
  return projectContext(f, { ...(o.json ? { json: true } : {}), ...(o.host ? { host: o.host } : {}), ...(o.project ? { project: o.project } : {}) });
}

export const sessionUrl = (f: Factory, ctx: ProjectContext, s: Pick<Session, 'project_id' | 'session_id'>) =>
  `${dashboardUrl(f, ctx.host.url)}/projects/${s.project_id}/sessions/${s.session_id}`;

export const statusColor = (c: Colors, s: string) =>
  s === 'running' ? c.green(s) : s === 'failed' ? c.red(s) : s === 'provisioning' || s === 'queued' || s === 'branching' ? c.yellow(s) : c.dim(s);

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/** Running, and its agent answers (a server without `agent_state`: running is all it says). */
const isReady = (s: Session) => s.status === 'running' && (s.agent_state === undefined || s.agent_state === 'ready');

/**
 * Waits until the session is `running` and its agent `ready` (or either fails), with a
 * spinner on stderr when it is a terminal. The server decides when provisioning has taken
 * too long (it fails the session, or records the agent's `error`).
 */
export async function waitRunning(f: Factory, ctx: ProjectContext, id: string, opts: { quiet?: boolean; pollMs?: number; timeoutMs?: number } = {}): Promise<Session> {
  const api = sessionsApi(ctx.api);
  const tty = f.io.stderrIsTTY && !opts.quiet;
  const deadline = Date.now() + (opts.timeoutMs ?? 10 * 60_000);
  let frame = 0;
  let s = await api.get(ctx.projectId, id);
  if (!opts.quiet && !tty && !isReady(s)) f.io.err.write(`Waiting for session ${s.session_id} to start...\n`);
  while (!isReady(s)) {
    if (s.status === 'failed' || s.status === 'stopped' || s.status === 'completed' || s.agent_state === 'error') {
      if (tty) f.io.err.write('\r\x1b[K');
      const what = s.status === 'running' ? 'agent failed to start' : s.status;
      throw new CliError(`session ${s.session_id} ${what}${s.error ? `: ${s.error.message}` : ''}`, `see 'svc sessions info ${s.session_id}'`);
    }
    const doing = s.status === 'running' ? 'agent starting' : s.status;
    if (Date.now() > deadline) throw new CliError(`session ${s.session_id} is still ${doing}`, `check later with 'svc sessions info ${s.session_id}'`);
    if (tty) f.io.err.write(`\r${FRAMES[frame++ % FRAMES.length]} ${doing}...`);
    await new Promise((r) => setTimeout(r, opts.pollMs ?? 400));
    s = await api.get(ctx.projectId, id);
  }
  if (tty) f.io.err.write('\r\x1b[K');
  return s;
}
