import type { TestProject } from '../../support/server.js';
import { eventually, mergeChange, projectPath } from '../manifest/support.js';

export { eventually, mergeChange, projectPath };

/** Server settings for the checks specs: a fast refresher, the process provider (TEST_ENV). */
export const CHECKS_ENV = { SVC_SCHEDULER: '0', SVC_CHECKS_REFRESH_MS: '150' };

/** Puts `toml` in force as svc.toml (a merge into main, then the re-sync it queues). */
export async function putManifest(p: TestProject, toml: string, files: Record<string, string> = {}): Promise<string> {
  const sha = await mergeChange(p, `manifest-${Date.now()}`, { 'svc.toml': toml, ...files });
  await eventually(async () => (await p.api.get(`${projectPath(p)}/manifest`)).body.source_sha === sha, 'the manifest in force');
  return sha;
}

export interface CheckJson {
  run_id: string;
  name: string;
  status: string;
  base_sha: string;
  head_sha: string;
  merge_sha: string | null;
  finished_at: string | null;
  log_url: string;
}

export const checksOf = async (p: TestProject, n: number) => (await p.api.get(`${p.base}/${n}/checks`)).body as { checks: CheckJson[]; statuses: any[]; auto_merge: any };

/** Waits for check `name` of CR `n` to settle on exactly (base, head). */
export async function settled(p: TestProject, n: number, name: string, pair: { base: string; head: string }, timeoutMs = 60_000): Promise<CheckJson> {
  return eventually(async () => {
    const c = (await checksOf(p, n)).checks.find((x) => x.name === name);
    return c && c.base_sha === pair.base && c.head_sha === pair.head && ['passed', 'failed', 'errored'].includes(c.status) ? c : null;
  }, `check ${name} of #${n} to settle on ${pair.base.slice(0, 7)}/${pair.head.slice(0, 7)}`, timeoutMs);
}

/** Every event of a CR's stream, in order. */
export async function crEvents(p: TestProject, crId: string): Promise<{ type: string; data: any }[]> {
  return p.srv.db.db.rows({ text: 'SELECT type, data FROM events WHERE stream_id = $1 ORDER BY stream_position', values: [`cr-${crId}`] });
}
