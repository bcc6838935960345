/** Opening a URL in the user's browser: `BROWSER`, else the platform's opener. */
import { spawn } from 'node:child_process';
import type { Env, Factory } from './factory.js';

export async function openBrowser(url: string, env: Env): Promise<void> {
  const [cmd, args] = env.BROWSER
    ? [env.BROWSER, [url]]
    : process.platform === 'darwin'
      ? ['open', [url]]
      : process.platform === 'win32'
        ? ['cmd', ['/c', 'start', '""', url]]
        : ['xdg-open', [url]];
  await new Promise<void>((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: 'ignore', detached: true });
    child.once('error', reject);
    child.once('spawn', () => {
      child.unref();
      resolve();
    });
  });
}

/** Opens `url` in the browser on a terminal (never under CI); prints it on stdout otherwise, or when no browser opens. */
export async function openOrPrint(f: Factory, url: string): Promise<void> {
  if (f.io.stdinIsTTY && f.io.stdoutIsTTY && !f.env.CI) {
    f.io.err.write(`Opening ${url} in your browser.\n`);
    try {
      await f.openBrowser(url);
      return;
    } catch {
      f.io.err.write('(could not open a browser)\n');
    }
  }
  f.io.out.write(`${url}\n`);
}
