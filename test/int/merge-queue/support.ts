import { execFileSync } from 'node:child_process';
import type { TestProject } from '../../support/server.js';
import type { Executor } from '../../../infra/db/db.js';
import { eventually, projectPath } from '../manifest/support.js';

export { eventually, projectPath };

export const queueManifest = (opts: { maxBatch?: number; send?: boolean } = {}) => `[[checks]]
name = "test"
run = "sh check.sh"
timeout_minutes = 2

[review]
send_failures_to_agent = ${opts.send ? 'true' : 'false'}

[merge_queue]
enabled = true
max_batch = ${opts.maxBatch ?? 4}
`;

/** A check that takes a moment and fails when the tree holds `fail.txt`. */
export const checkScript = (sleepS = 1) => `sleep ${sleepS}\nif [ -f fail.txt ]; then echo "fail.txt is present"; exit 4; fi\n`;

/** Every event of a stream, in order. */
export async function streamEvents(db: Executor, streamId: string): Promise<{ type: string; data: any }[]> {
  return db.rows({ text: 'SELECT type, data FROM events WHERE stream_id = $1 ORDER BY stream_position', values: [streamId] });
}

export const crEventsOf = (db: Executor, crId: string) => streamEvents(db, `cr-${crId}`);

/** `main`'s first-parent history after `from`, oldest first, read in the project's bare repository. */
export function firstParents(bare: string, from: string, branch = 'main'): string[] {
  const out = execFileSync('git', ['rev-list', '--first-parent', '--reverse', `${from}..${branch}`], { cwd: bare, encoding: 'utf8' }).trim();
  return out ? out.split('\n') : [];
}

export function isAncestor(bare: string, a: string, b: string): boolean {
  try {
    execFileSync('git', ['merge-base', '--is-ancestor', a, b], { cwd: bare });
    return true;
  } catch {
    return false;
  }
}

export const queueOf = async (p: TestProject) => (await p.api.get(`${projectPath(p)}/merge-queue?base=main`)).body.merge_queue;

export const crOf = async (p: TestProject, n: number) => (await p.api.get(`${p.base}/${n}`)).body.change_request;

export const queueStateOf = async (p: TestProject, n: number) => (await p.api.get(`${p.base}/${n}/checks`)).body.merge_queue;
