/**
 * A minimal OpenAI-compatible model for the sessions bench: every `POST /chat/completions`
 * streams one short reply (`REPLY`) as SSE chunks at once, so "the agent answered" measures
 * the platform and the runtime, not a model. (test/support/scripted-model.ts is the full
 * scripted one; bench/ may not import test/.)
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export const REPLY = 'PONGTOKEN';

export async function startStreamModel(key: string): Promise<{ url: string; calls: number; close(): Promise<void> }> {
  const state = { calls: 0 };
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      if (req.headers.authorization !== `Bearer ${key}`) {
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":{"message":"bad key"}}');
        return;
      }
      if (req.method === 'GET' && req.url?.endsWith('/models')) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: [{ id: 'scripted', object: 'model' }] }));
        return;
      }
      state.calls++;
      const parsed = (() => {
        try {
          return JSON.parse(body) as { stream?: boolean; model?: string };
        } catch {
          return {};
        }
      })();
      const base = { id: `c${state.calls}`, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: parsed.model ?? 'scripted' };
      if (parsed.stream === false) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({ ...base, object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: REPLY }, finish_reason: 'stop' }], usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 } }),
        );
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const send = (o: unknown) => res.write(`data: ${JSON.stringify(o)}\n\n`);
      send({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: REPLY }, finish_reason: null }] });
      send({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
      send({ ...base, choices: [], usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 } });
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    get calls() {
      return state.calls;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
