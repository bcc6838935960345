/**
 * `npm run bench -- dashboard`: the CR page of a 500-file diff, in one run:
 * - the JSON API's own time for that diff (`GET .../diff`, median), the floor;
 * - the page's time to first byte (server-rendered, signed in with a cookie), median;
 *   goal: at most 50 ms over the API call;
 * - chromium (Debian's, through playwright-core): navigation to DOMContentLoaded (the
 *   page's deferred script has run: interactive) and to load; goal: under 1 s.
 */
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../infra/config.js';
import { silentLogger } from '../../lib/logger.js';
import { bootstrapUser } from '../../services/accounts/service.js';
import { setPassword } from '../../services/dashboard/passwords.js';
import { startServer } from '../../ops/server.js';
import { median, type BenchRow, type BenchSuite } from '../types.js';
import { startBenchPostgres } from '../support/pg.js';

const FILES = 500;

function get(port: number, urlPath: string, headers: Record<string, string>): Promise<{ status: number; ttfb: number; total: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = http.request({ host: '127.0.0.1', port, path: urlPath, headers, agent: false }, (res) => {
      const ttfb = performance.now() - t0;
      res.on('data', () => {});
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ttfb, total: performance.now() - t0 }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function bigRepo(root: string): Promise<string> {
  const env = { ...process.env, GIT_AUTHOR_NAME: 'b', GIT_AUTHOR_EMAIL: 'b@x', GIT_COMMITTER_NAME: 'b', GIT_COMMITTER_EMAIL: 'b@x', GIT_CONFIG_GLOBAL: '/dev/null' };
  const bare = path.join(root, 'remote.git');
  const work = path.join(root, 'work');
  const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env, encoding: 'utf8' });
  git(root, 'init', '-q', '--bare', '-b', 'main', bare);
  git(root, 'init', '-q', '-b', 'main', work);
  for (let i = 0; i < FILES; i++) {
    await mkdir(path.join(work, `src/m${i % 20}`), { recursive: true });
    await writeFile(path.join(work, `src/m${i % 20}/f${i}.ts`), Array.from({ length: 20 }, (_, l) => `export const v${l} = ${l};`).join('\n') + '\n');
  }
  git(work, 'add', '-A');
  git(work, 'commit', '-q', '-m', 'base');
  git(work, 'push', '-q', bare, 'main');
  git(work, 'checkout', '-q', '-b', 'big');
  for (let i = 0; i < FILES; i++) {
    await writeFile(path.join(work, `src/m${i % 20}/f${i}.ts`), Array.from({ length: 20 }, (_, l) => (l % 4 === 0 ? `export const v${l} = ${l} + 1; // changed` : `export const v${l} = ${l};`)).join('\n') + '\n');
  }
  git(work, 'commit', '-qam', 'change 500 files');
  git(work, 'push', '-q', bare, 'big');
  return `file://${bare}`;
}

export const run: BenchSuite = async ({ quick }) => {
  const n = quick ? 5 : 15;
  const pg = await startBenchPostgres('svc-bench-dash-');
  const root = await mkdtemp(path.join(os.tmpdir(), 'svc-bench-dash-repo-'));
  let stop: (() => Promise<void>) | undefined;
  try {
    const { db, url } = await pg.database('dashboard', { max: 12 });
    const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', SVC_DATA_DIR: path.join(root, 'data'), LOG_LEVEL: 'silent', SVC_ALLOW_FILE_REPOS: '1' });
    const server = await startServer({ config, logger: silentLogger, roles: { api: true, worker: true }, database: { db, url, embedded: false, close: async () => {} } });
    stop = () => server.stop();
    const user = await bootstrapUser(db, { email: 'bench@example.test' });
    await setPassword(db, 'bench@example.test', 'bench password');
    const auth = { authorization: `Bearer ${user.token.token}`, 'content-type': 'application/json' };
    const repoUrl = await bigRepo(root);
    const p = await (await fetch(`${server.url}/v1/projects`, { method: 'POST', headers: auth, body: JSON.stringify({ name: 'bench', slug: 'bench', repo_url: repoUrl }) })).json() as { project: { project_id: string } };
    const pid = p.project.project_id;
    const cr = await fetch(`${server.url}/v1/projects/${pid}/change-requests`, { method: 'POST', headers: auth, body: JSON.stringify({ title: 'Big', head_ref: 'big' }) });
    if (cr.status !== 201) throw new Error(`CR not created: ${await cr.text()}`);

    // Sign in as a browser does: the form's cookie and token, then the session cookie.
    const form = await fetch(`${server.url}/login`);
    const pre = /svc_pre=([^;]+)/.exec(form.headers.get('set-cookie') ?? '')![1]!;
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())![1]!;
    const signed = await fetch(`${server.url}/login`, {
      method: 'POST', redirect: 'manual',
      headers: { cookie: `__Host-svc_pre=${pre}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: csrf, email: 'bench@example.test', password: 'bench password' }),
    });
    const session = /svc_session=([^;]+)/.exec(signed.headers.get('set-cookie') ?? '')![1]!;

    const apiPath = `/v1/projects/${pid}/change-requests/1/diff`;
    const pagePath = `/projects/${pid}/change-requests/1`;
    const apiTimes: number[] = [];
    const pageTtfb: number[] = [];
    for (let i = 0; i < 2; i++) {
      await get(server.port, apiPath, auth);
      await get(server.port, pagePath, { cookie: `__Host-svc_session=${session}` });
    }
    for (let i = 0; i < n; i++) {
      const a = await get(server.port, apiPath, auth);
      if (a.status !== 200) throw new Error(`diff answered ${a.status}`);
      apiTimes.push(a.total);
      const pg2 = await get(server.port, pagePath, { cookie: `__Host-svc_session=${session}` });
      if (pg2.status !== 200) throw new Error(`page answered ${pg2.status}`);
      pageTtfb.push(pg2.ttfb);
    }

    const { launch } = await import('../../test/dashboard/support.js').catch(() => ({ launch: undefined }));
    const rows: BenchRow[] = [];
    const api = median(apiTimes);
    const page = median(pageTtfb);
    rows.push({ suite: 'dashboard', name: `JSON API GET diff (${FILES} files)`, value: api, unit: 'ms' });
    rows.push({ suite: 'dashboard', name: 'CR page TTFB (server-rendered)', value: page, unit: 'ms', floor: api, ratio: page / api, goal: '<= API + 50 ms', met: page - api <= 50, notes: `adds ${(page - api).toFixed(1)} ms` });
    if (launch) {
      const browser = await launch();
      try {
        const ctx = await browser.newContext();
        // CDP will not plant a __Host- cookie on an http URL: the header carries it instead.
        await ctx.setExtraHTTPHeaders({ cookie: `__Host-svc_session=${session}` });
        const tab = await ctx.newPage();
        const dcl: number[] = [];
        const load: number[] = [];
        for (let i = 0; i < (quick ? 3 : 7); i++) {
          await tab.goto(`${server.url}${pagePath}`, { waitUntil: 'load' });
          const t = await tab.evaluate(() => {
            // In the page: Navigation Timing (Node's lib types do not describe it).
            const nav = (performance as unknown as { getEntriesByType(t: string): Array<{ startTime: number; domContentLoadedEventEnd: number; loadEventEnd: number }> }).getEntriesByType('navigation')[0]!;
            return { dcl: nav.domContentLoadedEventEnd - nav.startTime, load: nav.loadEventEnd - nav.startTime };
          });
          dcl.push(t.dcl);
          load.push(t.load);
        }
        rows.push({ suite: 'dashboard', name: 'CR page interactive in chromium (DOMContentLoaded)', value: median(dcl), unit: 'ms', goal: '< 1000 ms', met: median(dcl) < 1000 });
        rows.push({ suite: 'dashboard', name: 'CR page load in chromium', value: median(load), unit: 'ms', goal: '< 1000 ms', met: median(load) < 1000 });
      } finally {
        await browser.close();
      }
    }
    return rows;
  } finally {
    await stop?.();
    await pg.stop();
    await rm(root, { recursive: true, force: true });
  }
};
