/** Browser-test support: Debian's chromium through playwright-core (no browser download). */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { projectRoot } from '../../lib/paths.js';
import { setPassword } from '../../services/dashboard/passwords.js';
import type { TestServer } from '../support/server.js';

export const CHROMIUM = process.env.SVC_CHROMIUM ?? '/usr/bin/chromium';
export const ARTEFACTS = path.join(projectRoot, 'test-artifacts');
export const PASSWORD = 'correct horse battery staple';

/** `extraArgs`: e.g. `--host-resolver-rules` for a public name mapped to this machine. */
export async function launch(extraArgs: string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', ...extraArgs],
  });
}

export async function withPassword(srv: TestServer, email = 'owner@example.test'): Promise<void> {
  await setPassword(srv.db.db, email, PASSWORD);
}

export async function signIn(page: Page, url: string, email = 'owner@example.test', password = PASSWORD): Promise<void> {
  await page.goto(`${url}/login`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await Promise.all([page.waitForURL(/\/projects/), page.getByRole('button', { name: 'Sign in', exact: true }).click()]);
}

export async function screenshot(page: Page, name: string): Promise<string> {
  await mkdir(ARTEFACTS, { recursive: true });
  const file = path.join(ARTEFACTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/** A signed-in browser over plain HTTP: the session cookie (`__Host-svc_session=...`) of `email`. */
export async function signInHttp(url: string, email = 'owner@example.test', password = PASSWORD): Promise<string> {
  const login = await fetch(`${url}/login`);
  const pre = /svc_pre=([^;]+)/.exec(login.headers.get('set-cookie') ?? '')![1]!;
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await login.text())![1]!;
  const signedIn = await fetch(`${url}/login`, {
    method: 'POST', redirect: 'manual',
    headers: { cookie: `__Host-svc_pre=${pre}`, 'content-type': 'application/x-www-form-urlencoded', origin: url },
    body: new URLSearchParams({ _csrf: csrf, email, password }),
  });
  const cookie = /svc_session=([^;]+)/.exec(signedIn.headers.get('set-cookie') ?? '')?.[1];
  if (signedIn.status !== 303 || !cookie) throw new Error(`sign-in of ${email} failed: ${signedIn.status}`);
  return `__Host-svc_session=${cookie}`;
}

/** A dashboard request as a signed-in browser (no redirects followed): status, body, Location. */
export async function dashFetch(url: string, cookie: string, path: string, init: { form?: Record<string, string>; accept?: string } = {}) {
  const r = await fetch(`${url}${path}`, {
    method: init.form ? 'POST' : 'GET',
    redirect: 'manual',
    headers: { cookie, accept: init.accept ?? 'text/html', ...(init.form ? { 'content-type': 'application/x-www-form-urlencoded', origin: url } : {}) },
    ...(init.form ? { body: new URLSearchParams(init.form) } : {}),
  });
  return { status: r.status, text: await r.text(), location: r.headers.get('location') };
}

/** The CSRF token a page's forms carry. */
export const csrfIn = (pageText: string) => /name="_csrf" value="([^"]+)"/.exec(pageText)![1]!;
