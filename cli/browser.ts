/** Opening a URL in the user's browser: `BROWSER`, else the platform's opener. */
import { spawn } from 'node:child_process';
import type { Env } from './factory.js';

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
