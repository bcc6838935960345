import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { withProject, type TestProject } from '../support/server.js';
import { appsState, eventually, mergeChange, projectPath } from '../int/manifest/support.js';
import { launch, screenshot, signIn, signInHttp, withPassword } from './support.js';

/**
 * Apps on their own origin, in chromium, as a second tenant's app would attack a person
 * signed in to the dashboard: with the local defaults (dashboard on 127.0.0.1, apps on
 * `*.localhost`) and with SVC_PUBLIC_URL=https://svc.test and apps on `*.apps.svc.test`
 * (chromium maps the names to a TLS front on this machine).
 */

// The tenant's app shows what reached it and tries to toss cookies the dashboard would read:
// its owner's own dashboard session, under the dashboard's name, for the whole site.
const SERVER_JS = `const http = require('node:http');
http.createServer((req, res) => {
  if (req.url === '/healthz') return res.end('ok');
  const toss = process.env.TOSS, site = process.env.SITE;
  const tries = ['svc_session=' + toss + '; domain=' + site + '; path=/', '__Host-svc_session=' + toss + '; path=/; secure',
    '__Secure-svc_session=' + toss + '; domain=' + site + '; path=/; secure', 'svc_pre=x; domain=' + site + '; path=/'];
  res.writeHead(200, { 'content-type': 'text/html', 'set-cookie': ['svc_session=' + toss + '; Domain=' + site + '; Path=/', '__Host-svc_session=' + toss + '; Path=/; Secure'] });
  res.end('<!doctype html><title>app</title><pre id="seen">' + JSON.stringify(req.headers).replace(/</g, '') + '</pre><script>for (const c of ' +
    JSON.stringify(tries) + ') document.cookie = c; document.title = "tossed";</script>');
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

const manifest = (toss: string, site: string) => `[[apps]]
name = "shop"
command = "node server.js"
port = 3000
health_path = "/healthz"
public = true
env = { TOSS = "${toss}", SITE = "${site}" }

[[apps]]
name = "admin"
command = "node server.js"
port = 3000
health_path = "/healthz"
env = { TOSS = "${toss}", SITE = "${site}" }
`;

/** A TLS front for https://svc.test and its subdomains: forwards to the server as a proxy would. */
async function tlsFront(target: string, dir: string): Promise<{ port: number; close(): Promise<void> }> {
  const key = path.join(dir, 'key.pem');
  const cert = path.join(dir, 'cert.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=svc.test', '-addext', 'subjectAltName=DNS:svc.test,DNS:*.apps.svc.test,DNS:*.preview.svc.test'], { stdio: 'ignore' });
  const up = new URL(target);
  const server = https.createServer({ key: await readFile(key), cert: await readFile(cert) }, (req, res) => {
    const fwd = http.request({ host: up.hostname, port: up.port, method: req.method, path: req.url, headers: { ...req.headers, 'x-forwarded-proto': 'https' } }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    fwd.on('error', () => res.destroy());
    req.pipe(fwd);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

const setups = [
  { name: 'local defaults', env: {} as Record<string, string>, site: 'localhost' },
  { name: 'SVC_PUBLIC_URL=https://svc.test, apps on *.apps.svc.test', env: { SVC_PUBLIC_URL: 'https://svc.test', SVC_APPS_DOMAIN: 'apps.svc.test', SVC_PREVIEW_DOMAIN: 'preview.svc.test' }, site: 'svc.test' },
];

describe('apps on their own origin in chromium: another tenant\'s app', function () {
  this.timeout(180_000);
  let browser: Browser | undefined;
  afterEach(async () => {
    await browser?.close();
    browser = undefined;
  });

  it("local defaults: a signed-in person opening another tenant's public app reaches it and sends it no svc cookie; its cookie tossing leaves the dashboard theirs; a members-only app without its cookie goes to sign-in", () =>
    scenario(setups[0]!));

  it("https://svc.test, apps on *.apps.svc.test: a signed-in person opening another tenant's public app reaches it and sends it no svc cookie; its cookie tossing leaves the dashboard theirs; a members-only app without its cookie goes to sign-in", () =>
    scenario(setups[1]!));

  const scenario = (setup: (typeof setups)[number]) =>
    withProject({ slug: 'tenant', env: { SVC_SCHEDULER: '0', SVC_APP_HEALTH_TIMEOUT_MS: '20000', ...setup.env } }, async (p: TestProject) => {
      const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-app-origins-'));
      const front = setup.env.SVC_PUBLIC_URL ? await tlsFront(p.srv.url, dir) : null;
      try {
        const dash = setup.env.SVC_PUBLIC_URL ?? p.srv.url;
        // The tenant (the project's owner) signs in to get a session of its own to toss.
        await withPassword(p.srv);
        const tenantSession = (await signInHttp(p.srv.url)).split('=').slice(1).join('=');
        const pp = projectPath(p);
        await mergeChange(p, 'apps', { 'server.js': SERVER_JS, 'svc.toml': manifest(tenantSession, setup.site) });
        const apps = await eventually(async () => {
          const list = (await p.api.get(`${pp}/apps`)).body.apps as Array<{ name: string; status: string; url: string }>;
          return list.length === 2 && list.every((a) => a.status === 'live') ? Object.fromEntries(list.map((a) => [a.name, a.url])) : null;
        }, 'the apps live', 60_000, appsState(p));
        if (front) expect(apps.shop).to.match(/^https:\/\/shop-[0-9a-f]{12}\.apps\.svc\.test\/$/);
        else expect(apps.shop).to.match(new RegExp(`^http://shop-[0-9a-f]{12}\\.localhost:${new URL(p.srv.url).port}/$`));

        // The victim: another account, signed in to the dashboard.
        await p.srv.newUser('victim@example.test');
        await withPassword(p.srv, 'victim@example.test');
        browser = await launch(front ? [`--host-resolver-rules=MAP svc.test 127.0.0.1:${front.port}, MAP *.svc.test 127.0.0.1:${front.port}`, '--ignore-certificate-errors'] : []);
        const ctx = await browser.newContext();
        const page = await ctx.newPage();
        await signIn(page, dash, 'victim@example.test');
        const mine = (await ctx.cookies(dash)).find((c) => c.name === '__Host-svc_session')!;
        expect(mine.secure).to.equal(true);

        // The public app: reached, and nothing of the dashboard's went along.
        await page.goto(apps.shop!);
        await page.waitForFunction('document.title === "tossed"');
        await screenshot(page, `app-origin-${front ? 'https' : 'local'}`);
        const seen = JSON.parse((await page.textContent('#seen'))!) as Record<string, string>;
        expect(seen.cookie ?? '').to.not.match(/svc_/);
        expect(seen).to.not.have.any.keys('authorization', 'x-svc-user-context');
        expect(seen.referer ?? '').to.not.contain('/projects');

        // The tossing landed where a browser lets it (https: a bare-named cookie for the whole
        // site, sent to the dashboard too) and changed nothing the dashboard reads: still the
        // victim, same session.
        const tossed = (await ctx.cookies(dash)).filter((c) => c.name === 'svc_session' && c.value === tenantSession);
        expect(tossed.length).to.equal(front ? 1 : 0);
        await page.goto(`${dash}/projects`);
        expect(await page.textContent('body')).to.contain('victim@example.test');
        expect(await page.textContent('body')).to.not.contain('owner@example.test');
        const after = (await ctx.cookies(dash)).find((c) => c.name === '__Host-svc_session')!;
        expect(after.value).to.equal(mine.value);

        // The members-only app, without its cookie: to the dashboard's sign-in.
        const fresh = await browser.newContext();
        const visitor = await fresh.newPage();
        await visitor.goto(`${apps.admin}deep?q=1`);
        expect(visitor.url()).to.match(new RegExp(`^${dash.replace(/[.]/g, '\\.')}/login\\?next=`));
        // Signed in as the project's member, the browser comes back to the app itself.
        await visitor.getByLabel('Email').fill('owner@example.test');
        await visitor.getByLabel('Password').fill('correct horse battery staple');
        await Promise.all([visitor.waitForURL(`${apps.admin}deep?q=1`), visitor.getByRole('button', { name: 'Sign in', exact: true }).click()]);
        const inside = JSON.parse((await visitor.textContent('#seen'))!) as Record<string, string>;
        expect(inside.cookie ?? '').to.not.match(/svc_/);
        // The victim, no member of that project, gets no way in.
        const refused = await page.goto(`${apps.admin}`);
        expect(refused!.status()).to.equal(404);
      } finally {
        await front?.close();
        await rm(dir, { recursive: true, force: true });
      }
    });
});
