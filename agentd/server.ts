import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from '../lib/logger.js';
import { handleControl, type ControlDeps } from './control-routes.js';
import { HttpError, sendError, writeRawError } from './http-util.js';
import { authorizeProxy, parseTarget } from './proxy-auth.js';
import type { AgentState } from './supervisor.js';

export interface ServerDeps {
  control: ControlDeps;
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
 * The daemon's http server: `/svc/*` is the control surface, and it words every refusal of
 * a proxied request. It proxies nothing: the raw proxy (`raw-proxy/`) is the daemon's one
 * proxy, and hands this server a connection only at a request it does not serve (the
 * control surface, a refused or missing context, the runtime still starting, HTTP/1.0,
 * CONNECT). Every answer here closes its connection, so a handed-off connection never
 * carries a request the raw proxy should have served: the client's next request comes on a
 * new connection, through the raw proxy. No request can throw past here.
 */
export function createDaemonServer(deps: ServerDeps): http.Server {
  const now = deps.now ?? (() => Math.floor(Date.now() / 1000));

  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    req.on('error', ignore);
    res.on('error', ignore);
    res.shouldKeepAlive = false;
    if (isControlPath(req.url)) {
      handleControl(req, res, controlPath(req.url!), deps.control).catch((err: unknown) => answerError(res, err));
      return;
    }
    try {
      const target = parseTarget(req.url, deps.runtimePort, deps.ownPort);
      authorizeProxy(req, target, deps.token, now());
      if (target.kind === 'runtime' && deps.agentState() !== 'running') {
        throw new HttpError(503, 'Unavailable', 'The agent runtime is starting.');
      }
      // Authorized, yet not served by the raw proxy: its framing is one the proxy does not carry.
      throw req.method === 'CONNECT'
        ? new HttpError(405, 'Method not allowed', 'CONNECT is not proxied.')
        : new HttpError(505, 'HTTP version not supported', 'Proxied requests must use HTTP/1.1.');
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
      throw new HttpError(505, 'HTTP version not supported', 'Upgrades are proxied over HTTP/1.1 only.');
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
