/**
 * A scripted OpenAI-compatible model for tests: `POST /v1/chat/completions` answers with
 * the next step of a script (tool calls and/or text, then a usage chunk) as SSE
 * `chat.completion.chunk`s, or as one JSON body when `stream` is false; `GET /v1/models`
 * lists its models. Every request is recorded (headers and body), so a test can assert
 * which key arrived and that nothing of a sandbox leaked upstream.
 *
 * The step of a request is the number of assistant messages already in its conversation:
 * a runtime retrying a request gets the same step again, and requests without tools (a
 * runtime's title or summary calls) get a short text answer (or `plain`'s) and do not consume
 * the script. As a real upstream, it reports no more output than the request's max_tokens;
 * a step can wait for a test's gate, or end its stream without the usage chunk (`cut`).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ScriptedToolCall {
  name: string;
  args: Record<string, unknown>;
}

export interface ScriptedStep {
  tool_calls?: ScriptedToolCall[];
  text?: string;
  usage?: { prompt_tokens: number; completion_tokens: number };
  /** Answered once this settles (a test holding calls in flight). */
  gate?: Promise<unknown>;
  /** A stream that ends without its usage chunk after the text: held open until the caller leaves, or cut. */
  cut?: 'hold' | 'destroy';
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: any;
  raw: string;
}

export interface ScriptedModel {
  /** Base URL ending in /v1, as OpenAI clients take it. */
  url: string;
  requests: RecordedRequest[];
  /** Requests that carried tools (the agent loop's own turns). */
  agentTurns(): RecordedRequest[];
  close(): Promise<void>;
}

export interface ScriptedModelOptions {
  /** Every request must carry `Authorization: Bearer <key>` (401 in OpenAI's shape otherwise). */
  key?: string;
  models?: string[];
  /** The steps, or a function of the request and its step index. Past the end: a closing text. */
  script: ScriptedStep[] | ((body: any, step: number) => ScriptedStep);
  /** The answer to requests without tools (a runtime's title calls); default a short title with the default usage. */
  plain?: (body: any) => ScriptedStep;
}

const DEFAULT_USAGE = { prompt_tokens: 100, completion_tokens: 10 };

/** A step that runs one shell command through the runtime's own `bash` tool. */
export function bashStep(command: string, usage?: ScriptedStep['usage']): ScriptedStep {
  return { tool_calls: [{ name: 'bash', args: { command, description: 'step' } }], ...(usage ? { usage } : {}) };
}

/** A chat message's text: its string content, or the text parts of a list. */
export function messageText(m: any): string {
  return typeof m?.content === 'string' ? m.content : Array.isArray(m?.content) ? m.content.map((part: any) => (typeof part?.text === 'string' ? part.text : '')).join('') : '';
}

/**
 * A script in phases, for agents prompted more than once: the conversation's last user
 * message picks the phase (`pick` gets its text), and the number of assistant turns since
 * it is the step within the phase. Past a phase's end: a closing text.
 */
export function phasedScript(pick: (lastUserText: string) => ScriptedStep[]): (body: any) => ScriptedStep {
  return (body) => {
    const messages: any[] = Array.isArray(body?.messages) ? body.messages : [];
    const lastUser = messages.map((m) => m?.role).lastIndexOf('user');
    const since = messages.slice(lastUser + 1).filter((m) => m?.role === 'assistant').length;
    return pick(lastUser >= 0 ? messageText(messages[lastUser]) : '')[since] ?? { text: 'Done.' };
  };
}

export async function startScriptedModel(opts: ScriptedModelOptions): Promise<ScriptedModel> {
  const requests: RecordedRequest[] = [];
  const models = opts.models ?? ['scripted'];
  let callSeq = 0;
  const stepOf = (body: any): ScriptedStep => {
    const messages: any[] = Array.isArray(body?.messages) ? body.messages : [];
    const n = messages.filter((m) => m?.role === 'assistant').length;
    if (typeof opts.script === 'function') return opts.script(body, n);
    return opts.script[n] ?? { text: 'Done.' };
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: any = null;
      try {
        body = raw ? JSON.parse(raw) : null;
      } catch {
        body = null;
      }
      const path = (req.url ?? '/').split('?')[0]!;
      requests.push({ method: req.method ?? 'GET', path, headers: req.headers, body, raw });
      const fail = (status: number, message: string, type: string) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message, type, param: null, code: null } }));
      };
      if (opts.key !== undefined && req.headers.authorization !== `Bearer ${opts.key}`) return fail(401, 'Incorrect API key provided.', 'invalid_request_error');
      if (req.method === 'GET' && path === '/v1/models') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data: models.map((id) => ({ id, object: 'model', created: 0, owned_by: 'scripted' })) }));
        return;
      }
      if (req.method !== 'POST' || path !== '/v1/chat/completions') return fail(404, `No route ${req.method} ${path}.`, 'invalid_request_error');
      if (!body || typeof body.model !== 'string') return fail(400, 'model is required.', 'invalid_request_error');
      const withTools = Array.isArray(body.tools) && body.tools.length > 0;
      const step: ScriptedStep = withTools ? stepOf(body) : (opts.plain?.(body) ?? { text: 'Scripted title' });
      if (step.gate) {
        void step.gate.then(() => answer(body, step));
        return;
      }
      answer(body, step);
    });
    const answer = (body: any, step: ScriptedStep) => {
      // As a real upstream: never more output than max_tokens (per choice) allows.
      const asked = [body.max_tokens, body.max_completion_tokens].filter((v: unknown): v is number => typeof v === 'number');
      const cap = asked.length ? Math.min(...asked) * (Number.isInteger(body.n) && body.n > 1 ? body.n : 1) : Infinity;
      const reported = step.usage ?? DEFAULT_USAGE;
      const usage = { ...reported, completion_tokens: Math.min(reported.completion_tokens, cap) };
      const id = `chatcmpl-${++callSeq}`;
      const created = Math.floor(Date.now() / 1000);
      const toolCalls = (step.tool_calls ?? []).map((t, i) => ({
        index: i,
        id: `call_${callSeq}_${i}`,
        type: 'function',
        function: { name: t.name, arguments: JSON.stringify(t.args) },
      }));
      const finish = toolCalls.length ? 'tool_calls' : 'stop';
      const usageJson = { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens };
      if (body.stream !== true) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id,
            object: 'chat.completion',
            created,
            model: body.model,
            choices: [{ index: 0, message: { role: 'assistant', content: step.text ?? null, ...(toolCalls.length ? { tool_calls: toolCalls.map(({ index: _i, ...t }) => t) } : {}) }, finish_reason: finish }],
            usage: usageJson,
          }),
        );
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
      const send = (choices: unknown[], extra: Record<string, unknown> = {}) =>
        res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: body.model, choices, ...extra })}\n\n`);
      send([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]);
      if (step.text) send([{ index: 0, delta: { content: step.text }, finish_reason: null }]);
      if (toolCalls.length) send([{ index: 0, delta: { tool_calls: toolCalls }, finish_reason: null }]);
      if (step.cut === 'hold') return; // the last text chunk, then nothing: the caller leaves first
      if (step.cut === 'destroy') {
        res.write(': cut\n\n', () => res.socket?.destroy()); // once what streamed has left
        return;
      }
      send([{ index: 0, delta: {}, finish_reason: finish }]);
      send([], { usage: usageJson });
      res.end('data: [DONE]\n\n');
    };
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    agentTurns: () => requests.filter((r) => Array.isArray(r.body?.tools) && r.body.tools.length > 0),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
