import net from 'node:net';

/** A TCP port on 127.0.0.1 that was free a moment ago. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => resolve(typeof addr === 'object' && addr ? addr.port : 0));
    });
  });
}

export async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/**
 * Whether `port` on `host` can be listened on now: null, or the error a listen gets
 * (EADDRINUSE, EACCES). A check before a process starts anything it would have to undo.
 */
export async function listenProblem(port: number, host: string): Promise<NodeJS.ErrnoException | null> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', (err: NodeJS.ErrnoException) => resolve(err));
    srv.listen({ port, host, exclusive: true }, () => srv.close(() => resolve(null)));
  });
}

/** The message for a port this server cannot listen on: what to set. */
export const portProblemMessage = (port: number, host: string, err: NodeJS.ErrnoException): string =>
  err.code === 'EADDRINUSE'
    ? `port ${port} on ${host} is in use (another svc-server, or another program): set PORT to a free port (e.g. PORT=${port === 65535 ? port - 1 : port + 1})`
    : `cannot listen on port ${port} on ${host} (${err.code ?? err.message}): set PORT (and HOST) to a port this user may open`;
