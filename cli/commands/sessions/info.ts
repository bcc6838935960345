import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import type { Factory } from '../../factory.js';
import { str } from '../../flags.js';
import { moneyText, secondsText } from '../../../lib/cost-text.js';
import { colors, formatTime, printJson } from '../../output.js';
import { sessionsApi, type Session } from '../../sessions-api.js';
import { ctxOf, sessionArg, sessionUrl, statusColor, withTarget } from './shared.js';

export const builder = (y: Argv) => withTarget(sessionArg(y));

export const handler = (argv: Args, f: Factory) => run(f, { id: String(argv.id), project: str(argv.project), host: str(argv.host), json: !!argv.json });

/** Status, branch, base ref, agent, sandbox URL and errors of one session. */
export async function run(f: Factory, o: { id: string; project?: string; host?: string; json: boolean }): Promise<void> {
  const ctx = await ctxOf(f, o);
  const s: Session = await sessionsApi(ctx.api).get(ctx.projectId, o.id);
  if (o.json) return printJson(f.io, s);
  const c = colors(f.io, f.env);
  const rows: Array<[string, string]> = [
    ['id', s.session_id],
    ['status', f.io.stdoutIsTTY ? statusColor(c, s.status) : s.status],
    ...(s.agent_state ? ([['agent_state', s.agent_state]] as Array<[string, string]>) : []),
    ['branch', s.branch],
    ['base', s.base_ref],
    ['agent', s.model ? `${s.agent} (${s.model})` : s.agent],
    ['sandbox', s.sandbox ? `${s.sandbox.state} (${s.sandbox.provider})` : ''],
    ['sandbox_url', s.sandbox?.url ?? ''],
    ['created', formatTime(f.io, s.created_at, f.now())],
    ['last_activity', formatTime(f.io, s.last_activity_at, f.now())],
  ];
  if (s.usage) {
    const u = s.usage;
    rows.push(['tokens', `${u.input_tokens} in, ${u.output_tokens} out (${u.requests} model call${u.requests === 1 ? '' : 's'})`]);
    for (const m of u.by_model) rows.push([`  ${m.model}`, `${m.input_tokens} in, ${m.output_tokens} out (${m.requests})${m.priced ? ` ${moneyText(m.money)}` : ' unpriced'}`]);
    rows.push(['cost', `${moneyText(u.money)}${u.unpriced_tokens ? ` + ${u.unpriced_tokens} unpriced tokens` : ''}`]);
    if (u.unmetered) rows.push(['model_calls', "unmetered (the agent uses its own provider's key: its calls bypass the gateway)"]);
    rows.push(['sandbox_time', `${secondsText(u.sandbox_seconds)}${u.cpu_seconds !== null ? ` (${secondsText(u.cpu_seconds)} CPU)` : ''}`]);
    for (const c of u.by_change_request) {
      rows.push([`  ${c.number === null ? 'unattributed' : `#${c.number}`}`, `${c.input_tokens + c.output_tokens} tokens, ${moneyText(c.money)}, sandbox ${secondsText(c.sandbox_seconds)}`]);
    }
  }
  // Pause and resume: what the last stop (or checkpoint) saved for the next restart.
  if (s.saved) {
    const v = s.saved;
    const what = [v.wip_sha ? `workspace ${v.wip_sha.slice(0, 12)}` : 'no workspace changes', v.conversation ? `conversation (${v.conversation_bytes} bytes)` : 'no conversation'];
    rows.push(['saved', `${what.join(', ')} at ${formatTime(f.io, v.saved_at, f.now())}`]);
    for (const k of v.skipped) rows.push(['  skipped', `${k.path} (${k.bytes} bytes: ${k.reason})`]);
  }
  if (s.error) rows.push(['error', `${s.error.code}: ${s.error.message} (${s.error.at})`]);
  rows.push(['url', sessionUrl(f, ctx, s)]);
  const pad = Math.max(...rows.map(([k]) => k.length)) + 1;
  for (const [k, v] of rows) f.io.out.write(f.io.stdoutIsTTY ? `${c.dim((k + ':').padEnd(pad))} ${v}\n` : `${k}:\t${v}\n`);
  // The failed sandbox's last output (secrets redacted by the server), as it printed it.
  if (s.error?.log) f.io.out.write(`\nsandbox log (last lines):\n${s.error.log.replace(/\n?$/, '\n')}`);
}
