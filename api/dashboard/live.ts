import { Router } from 'express';
import { WebSocket } from 'ws';
import type { Db } from '../../infra/db/db.js';
import { lastProjectPosition } from '../../services/dashboard/live.js';
import { apiOf, locals } from './context.js';

/**
 * `/projects/:projectId/live`: the project's event feed for the browser, as Server-Sent
 * Events. The server opens the API's own WebSocket feed (same auth, same project rules)
 * with the session's token, which never reaches the page, and relays each event with its
 * global position as the SSE id, so the browser's automatic reconnect resumes where it
 * stopped (`Last-Event-ID` becomes `?after=`). A stopping server closes the feed, which
 * ends the stream.
 */
export function liveRoutes(db: Db): Router {
  const r = Router();
  r.get('/projects/:projectId/live', async (req, res) => {
    const api = apiOf(req, res);
    const project = await api.getProject(String(req.params.projectId));
    const resume = req.headers['last-event-id'];
    let after = typeof resume === 'string' && /^\d{1,15}$/.test(resume) ? resume : undefined;
    if (!after) {
      after = String(await lastProjectPosition(db, project.project_id));
    }
    const wsUrl = `${api.apiBase.replace(/^http/, 'ws')}/projects/${project.project_id}/events?after=${after}`;
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
