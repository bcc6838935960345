/**
 * Small helpers shared by the bwrap, docker and kubernetes providers.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SandboxError } from './port.js';

/** The checkout (or install) this module runs from: `<appRoot>/dist/infra/sandbox/*.js`. */
export const appRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** Label keys every provider puts on what it creates (docker labels, pod labels, bwrap metadata). */
export const LABEL = {
  project: 'svc.project',
  session: 'svc.session',
  sandbox: 'svc.sandbox',
  managedBy: 'svc.managed-by',
  /** The install (its database) whose sessions made the sandbox: the orphan sweep lists only its own. */
  install: 'svc.install',
} as const;

/**
 * Sandbox ids become directory names, container names and Kubernetes object names (DNS
 * labels: lowercase letters, digits and `-`, at most 63). A uuid is used as it is; any
 * other id maps to `sbx-<hash>` (the id itself stays in the labels / metadata).
 */
export function sandboxName(id: string): string {
  if (!id) throw new SandboxError('create_failed', 'sandbox id is empty');
  if (/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(id)) return id;
  return `sbx-${createHash('sha256').update(id).digest('hex').slice(0, 24)}`;
}

/** The labels of a sandbox: the spec's labels plus project, session and sandbox ids. */
export function sandboxLabels(spec: { sandboxId: string; sessionId: string; projectId: string; labels: Record<string, string> }): Record<string, string> {
  return {
    ...spec.labels,
    [LABEL.project]: spec.projectId,
    [LABEL.session]: spec.sessionId,
    [LABEL.sandbox]: spec.sandboxId,
    [LABEL.managedBy]: 'svc',
  };
}

/** Whether `labels` carries every key/value of `wanted`. */
export function labelsMatch(labels: Record<string, string> | undefined, wanted: Record<string, string>): boolean {
  if (!labels) return false;
  return Object.entries(wanted).every(([k, v]) => labels[k] === v);
}

/** The absolute path of `cmd` on PATH, or undefined. */
export function which(cmd: string, envPath = process.env.PATH ?? ''): string | undefined {
  if (cmd.includes('/')) return existsSync(cmd) ? path.resolve(cmd) : undefined;
  for (const dir of envPath.split(':')) {
    if (!dir) continue;
    const p = path.join(dir, cmd);
    if (existsSync(p)) return p;
  }
  return undefined;
}

export const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls `fn` every `everyMs` until it returns true or `timeoutMs` passes; answers the last result. */
export async function pollUntil(fn: () => Promise<boolean> | boolean, timeoutMs: number, everyMs = 50): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (await fn()) return true;
    if (performance.now() >= deadline) return false;
    await delay(everyMs);
  }
}
