import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from '../lib/logger.js';
import { handleControl, type ControlDeps } from './control-routes.js';
import { HttpError, sendError } from './http-util.js';
import { authorizeProxy, parseTarget } from './proxy-auth.js';
import { writeRawError, type LoopbackProxy } from './proxy.js';
import type { AgentState } from './supervisor.js';

export interface ServerDeps {
  control: ControlDeps;
  proxy: LoopbackProxy;
  logger: Logger;
  token: string;
  runtimePort: number;
  ownPort: number;
  agentState: () => AgentState;
  now?: () => number;
}

/** One shared no-op listener: a socket error is answered elsewhere (or the client is gone). */
const ignore = (): undefined => undefined;

export const isControlPath = (url: string | undefined): boolean => url !== undefined && (url === '/svc' || /^\/svc[/?]/.test(url));
const controlPath = (url: string) => url.split('?')[0]!;

/**
 * The daemon's http server: `/svc/*` is the control surface; everything else is
 * proxied after the signed user context checks out. No request can throw past here.
 * It does not listen itself: `DaemonListener` serves proxied requests on raw sockets and
 * hands it the connections of every request it does not serve (the control surface, and
 * refusals, which this server words), so the http-module proxy below only carries the
 * rest of a connection that began with such a request.
 */
export function createDaemonServer(deps: ServerDeps): http.Server {
  const now = deps.now ?? (() => Math.floor(Date.now() / 1000));

  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    req.on('error', ignore);
    res.on('error', ignore);
    if (isControlPath(req.url)) {
      handleControl(req, res, controlPath(req.url!), deps.control).catch((err: unknown) => answerError(res, err));
      return;
    }
    try {
      const target = parseTarget(req.url, deps.runtimePort, deps.ownPort);
      const auth = authorizeProxy(req, target, deps.token, now());
      if (target.kind === 'runtime' && deps.agentState() !== 'running') {
        throw new HttpError(503, 'Unavailable', 'The agent runtime is starting.');
      }
      deps.proxy.forward(req, res, target, auth.setCookie);
    } catch (err) {
      req.resume();
      answerError(res, err);
    }
  };

  const answerError = (res: ServerResponse, err: unknown): void => {
    if (err instanceof HttpError) {
      sendError(res, err);
      return;
    }
    deps.logger.error({ err }, 'request failed');
    sendError(res, new HttpError(500, 'Internal error', 'The daemon could not handle the request.'));
  };

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', () => undefined);
    try {
      if (isControlPath(req.url)) throw new HttpError(404, 'Not found', 'The control surface does not upgrade.');
      const target = parseTarget(req.url, deps.runtimePort, deps.ownPort);
      authorizeProxy(req, target, deps.token, now());
      if (target.kind === 'runtime' && deps.agentState() !== 'running') {
        throw new HttpError(503, 'Unavailable', 'The agent runtime is starting.');
      }
      deps.proxy.upgrade(req, socket, head, target);
    } catch (err) {
      writeRawError(socket, err instanceof HttpError ? err : new HttpError(500, 'Internal error', 'Upgrade failed.'));
    }
  };

  const server = http.createServer({ noDelay: true, keepAliveTimeout: 65_000 }, onRequest);
  server.on('upgrade', onUpgrade);
  server.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
    else socket.destroy();
  });
  // Long-lived streams (SSE, WebSockets) are the point of this server.
  server.requestTimeout = 0;
  server.headersTimeout = 60_000;
  return server;
}
