/**
 * What the stand-in agent runtimes (exec-runtime.ts, sessions-cli/chat-runtime.ts) share:
 * the `serve --port P --hostname H` arguments the daemon starts them with, and JSON
 * answers. Kept beside exec-runtime.ts: the docker spec mounts this folder into the
 * container.
 */
import type { ServerResponse } from 'node:http';

export function listenArgs(argv = process.argv): { port: number; hostname: string } {
  // Like opencode: `--version` answers and exits (the daemon asks it before a resume);
  // anything but `serve` is a usage error, never a server left running.
  if (argv[2] === '--version') {
    process.stdout.write('0.0.0-test\n');
    process.exit(0);
  }
  if (argv[2] !== 'serve') {
    process.stderr.write('usage: <runtime> serve --port P --hostname H\n');
    process.exit(2);
  }
  const arg = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  return { port: Number(arg('--port') ?? 4096), hostname: arg('--hostname') ?? '127.0.0.1' };
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}
