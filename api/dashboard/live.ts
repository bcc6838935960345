import { Router, type Request } from 'express';
import { WebSocket } from 'ws';
import type { ApiDeps } from '../deps.js';
import { locals, projectOf } from './context.js';

/** This server's own address, as the request came in on it (the feed is this process's). */
function ownBase(req: Request): string {
  let host = (req.socket.localAddress ?? '127.0.0.1').replace(/^::ffff:/, '');
  if (host === '::' || host === '0.0.0.0') host = '127.0.0.1';
  if (host.includes(':')) host = `[${host}]`;
  return `ws://${host}:${req.socket.localPort}/v1`;
}

/**
 * `/projects/:projectId/live`: the project's event feed for the browser, as Server-Sent
 * Events. The project is resolved as the signed-in user (another account's: 404); then the
 * server opens the API's own WebSocket feed with the session's token, which never reaches
 * the page (so the feed ends when that token, the sign-in's revocation handle, is
 * revoked), and relays each event with its global position as the SSE id, so the
 * browser's automatic reconnect resumes where it stopped (`Last-Event-ID` becomes `?after=`). A stopping server closes the feed, which
 * ends the stream.
 */
export function liveRoutes(deps: ApiDeps): Router {
  const r = Router();
  r.get('/projects/:projectId/live', async (req, res) => {
    const project = await projectOf(deps, req, res);
    const resume = req.headers['last-event-id'];
    let after = typeof resume === 'string' && /^\d{1,15}$/.test(resume) ? resume : undefined;
    if (!after) {
      after = String(await deps.services.dashboard.lastProjectPosition(project.project_id));
    }
    const wsUrl = `${ownBase(req)}/projects/${project.project_id}/events?after=${after}`;
    const ws = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${locals(res).session!.apiToken}` } });
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', 'x-accel-buffering': 'no' });
    res.write('retry: 2000\n\n');
    const ping = setInterval(() => res.write(': ping\n\n'), 25_000);
    const end = () => {
      clearInterval(ping);
      if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) ws.terminate();
      if (!res.writableEnded) res.end();
    };
    ws.on('message', (data) => {
      const text = data.toString();
      let id = '';
      try {
        id = String((JSON.parse(text) as { global_position: number }).global_position);
      } catch {
        return;
      }
      res.write(`id: ${id}\ndata: ${text}\n\n`);
    });
    ws.on('close', end);
    ws.on('error', end);
    res.on('close', end);
  });
  return r;
}
