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

export async function launch(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
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
