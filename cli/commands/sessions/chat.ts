import { createInterface } from 'node:readline';
import type { Argv } from 'yargs';
import { AgentChat, type AgentEvent } from '../../agent-chat.js';
import type { Args } from '../../command-table.js';
import type { ProjectContext } from '../../context.js';
import { ApiError, CliError, UsageError } from '../../errors.js';
import type { Factory } from '../../factory.js';
import { str } from '../../flags.js';
import { ChatProgress } from '../../chat-progress.js';
import { colors } from '../../output.js';
import { sessionsApi, type Session } from '../../sessions-api.js';
import { createRunning, inputOf, sessionFlags } from './new.js';
import { ctxOf, waitRunning, withTarget } from './shared.js';

export const builder = (y: Argv) =>
  withTarget(
    sessionFlags(y.positional('id', { type: 'string', describe: 'Session id (default: the newest running session)' }))
      .option('new', { type: 'boolean', describe: 'Create a session first' })
      .option('json', { type: 'boolean', describe: 'Stream the agent’s events as JSON lines' })
      .option('progress', { type: 'boolean', describe: 'What the agent is doing on stderr (default: when stderr is a terminal, without --json)' }),
  );

export const handler = (argv: Args, f: Factory) => {
  if (argv.new && argv.id) throw new UsageError('give a session id or --new, not both');
  return run(f, { id: str(argv.id), isNew: !!argv.new, argv, prompt: str(argv.prompt), project: str(argv.project), host: str(argv.host), json: !!argv.json, ...(typeof argv.progress === 'boolean' ? { progress: argv.progress } : {}) });
};

interface ChatOptions {
  id?: string;
  isNew: boolean;
  argv: Args;
  prompt?: string;
  project?: string;
  host?: string;
  json: boolean;
  /** Unset: shown when stderr is a terminal and not --json. */
  progress?: boolean;
}

async function target(f: Factory, ctx: ProjectContext, o: ChatOptions): Promise<Session> {
  // With --new, --prompt is this chat's first message, not the session's initial prompt.
  if (o.isNew) {
    const { prompt: _p, ...input } = inputOf(o.argv);
    // The chat prompts at once: a session no model can answer is refused before its sandbox boots.
    return createRunning(f, ctx, { ...input, expect_prompt: true }, o.json);
  }
  const s = o.id ? await waitRunning(f, ctx, o.id, { quiet: o.json }) : await newestRunning(ctx);
  sameChoice(o.argv, s);
  return s;
}

/** The event stream ended mid-turn: a session that failed or stopped says why at once (exit 1). */
async function sessionFailure(sapi: ReturnType<typeof sessionsApi>, projectId: string, id: string): Promise<void> {
  const s = await sapi.get(projectId, id).catch(() => undefined);
  if (!s) return;
  if (s.error || s.status !== 'running' || s.agent_state === 'error' || s.agent_state === 'stopped') {
    throw new CliError(`session ${id} ${s.status === 'running' ? `agent ${s.agent_state}` : s.status}${s.error ? `: ${s.error.message}` : ''}`, `see 'svc sessions info ${id}'`);
  }
}

async function newestRunning(ctx: ProjectContext): Promise<Session> {
  const running = await sessionsApi(ctx.api).list(ctx.projectId, 'running');
  if (!running.length) throw new CliError('no running session in this project', "start one with 'svc sessions chat --new' or 'svc sessions new'");
  return running[0]!;
}

/**
 * An existing session's agent and model were fixed when it was created (the prompt API
 * takes neither), so a different `--agent`/`--model`/`--base` would be silently ignored:
 * refuse it instead (exit 2), naming what the session runs and how to get the other.
 */
function sameChoice(argv: Args, s: Session): void {
  const asked = inputOf(argv);
  const differs = [
    asked.agent !== undefined && asked.agent !== s.agent ? `--agent ${asked.agent} (it runs ${s.agent})` : '',
    asked.model !== undefined && asked.model !== s.model ? `--model ${asked.model} (it runs ${s.model ?? 'the default model'})` : '',
    asked.base_ref !== undefined && asked.base_ref !== s.base_ref ? `--base ${asked.base_ref} (it started from ${s.base_ref})` : '',
  ].filter(Boolean);
  if (differs.length) throw new UsageError(`session ${s.session_id} was created with another choice: ${differs.join(', ')}; use --new to start a session with it`);
}

/**
 * Talks to a session's agent through the server's proxy. `--prompt`: one turn, the
 * reply streamed to stdout, then exit. Otherwise a prompt loop on the terminal: Ctrl-C
 * aborts the running turn, a second Ctrl-C (or one at the prompt) exits.
 */
export async function run(f: Factory, o: ChatOptions): Promise<void> {
  const ctx = await ctxOf(f, o);
  const s = await target(f, ctx, o);
  if (!o.json) f.io.err.write(`Chatting with session ${s.session_id} (${s.agent})\n`);
  const sapi = sessionsApi(ctx.api);
  // The reply goes to stdout; a status line must not cut a reply line in half on a shared terminal.
  let replyAtLineStart = true;
  const progress = new ChatProgress(f.io.err, o.progress ?? (f.io.stderrIsTTY && !o.json), f.io.stderrIsTTY, () => {
    if (!replyAtLineStart && f.io.stdoutIsTTY) {
      f.io.out.write('\n');
      replyAtLineStart = true;
    }
  });
  const chat = new AgentChat(
    ctx.api,
    sapi.agentPath(s.project_id, s.session_id, '').replace(/\/$/, ''),
    ctx.host.token!,
    (text, agentSession) => sapi.prompt(ctx.projectId, s.session_id, text, agentSession),
    () => progress.show({ kind: 'starting' }),
  );
  const c = colors(f.io, f.env);
  let turnRunning = false;
  let interrupts = 0;
  let exitNow: (() => void) | undefined;
  const exited = new Promise<void>((r) => (exitNow = r));
  const stopListening = f.onInterrupt?.(() => {
    interrupts++;
    if (turnRunning && interrupts === 1) {
      f.io.err.write('\n(aborting; Ctrl-C again to exit)\n');
      void chat.abort();
      return;
    }
    exitNow?.();
  });

  const turn = async (text: string) => {
    interrupts = 0;
    await chat.listen();
    await chat.session();
    turnRunning = true;
    let wroteText = false;
    let endedWithNewline = true;
    try {
      await chat.send(text);
      const out = await Promise.race([
        chat.turn({
          activity: (a) => progress.show(a),
          text: (d) => {
            if (o.json) return;
            progress.clear();
            f.io.out.write(d);
            replyAtLineStart = d.endsWith('\n');
            wroteText = true;
            endedWithNewline = d.endsWith('\n');
          },
          event: (e: AgentEvent) => {
            if (o.json) f.io.out.write(JSON.stringify(e) + '\n');
          },
        }),
        exited.then(() => ({ end: 'closed' as const, error: undefined })),
      ]);
      progress.clear();
      if (wroteText && !endedWithNewline) f.io.out.write('\n');
      replyAtLineStart = true;
      if (out.end === 'closed' && interrupts === 0) await sessionFailure(sapi, ctx.projectId, s.session_id);
      if (out.end === 'error') {
        if (interrupts > 0) f.io.err.write('(aborted)\n');
        else throw new CliError(`the agent failed: ${out.error}`);
      }
      return out.end;
    } finally {
      turnRunning = false;
      progress.clear();
    }
  };

  try {
    if (o.prompt !== undefined) {
      const end = await turn(o.prompt);
      if (end === 'closed' && interrupts === 0) throw new CliError('the agent stream closed before the reply finished');
      return;
    }
    if (!f.io.stdinIsTTY) throw new UsageError('interactive chat needs a terminal; pass --prompt "<text>"');
    const rl = createInterface({ input: f.io.in, output: undefined, terminal: false });
    const lines = rl[Symbol.asyncIterator]();
    for (;;) {
      f.io.err.write(c.bold('> '));
      const next = await Promise.race([lines.next(), exited.then(() => ({ done: true, value: undefined }))]);
      if (next.done) break;
      const text = String(next.value).trim();
      if (!text) continue;
      if (text === '/exit' || text === '/quit') break;
      const end = await turn(text);
      if (end === 'closed' && interrupts > 0) break;
    }
    rl.close();
  } catch (err) {
    // A session this chat started that no model can answer (a server that did not check
    // at create) would keep its sandbox and count against the cap: stopped, and said so.
    if (o.isNew && err instanceof ApiError && err.body.code === 'no_model') {
      await sapi.stop(ctx.projectId, s.session_id).catch(() => undefined);
      throw new CliError(err.message, `session ${s.session_id} was stopped: it had no model to answer with`);
    }
    throw err;
  } finally {
    stopListening?.();
    chat.close();
  }
}
