import type { Db, Executor, Isolation, Query } from '../../infra/db/db.js';
import { client } from './http.js';
import { fixtureRepo, type FixtureRepo } from './repo.js';
import { startTestServer, type TestServer } from './server.js';
import { until } from './wait.js';

/**
 * A Db that records every statement the server sends through it (rows/one/run, and
 * BEGIN/COMMIT of each transaction), for tests that count the statements a request
 * costs. Injected into the server under test (`startTestServer({ wrapDb })`); the pool,
 * dedicated connections (LISTEN) and pg-boss's own connections are not counted.
 */
export interface Statement {
  text: string;
  /** The transaction it ran in (BEGIN and COMMIT carry it too), else null. */
  tx: number | null;
}

export interface StatementLog {
  /** Statements since the last `reset`, in order. */
  readonly statements: Statement[];
  reset(): void;
  /**
   * The statements, leaving out those `isBackground` names and every transaction that ran
   * one (BEGIN/COMMIT included): the idle server's own upkeep, not a request's.
   */
  except(isBackground: (text: string) => boolean): string[];
}

export function countingDb(db: Db): { db: Db; log: StatementLog } {
  const statements: Statement[] = [];
  /** Every transaction that ran a statement, by id, so one seen only in part is still known. */
  const txTexts = new Map<number, string[]>();
  let nextTx = 1;
  const counted = (ex: Executor, tx: number | null): Executor => {
    const note = (q: Query) => {
      statements.push({ text: q.text, tx });
      if (tx !== null) txTexts.get(tx)!.push(q.text);
    };
    return {
      rows: (q) => (note(q), ex.rows(q)),
      one: (q) => (note(q), ex.one(q)),
      run: (q) => (note(q), ex.run(q)),
    };
  };
  const wrapped: Db = Object.create(db) as Db;
  Object.assign(wrapped, counted(db, null), {
    transaction: <T>(fn: (tx: Executor) => Promise<T>, o?: { isolation?: Isolation }) => {
      const tx = nextTx++;
      txTexts.set(tx, []);
      statements.push({ text: 'BEGIN', tx });
      return db.transaction((t) => fn(counted(t, tx)), o).finally(() => {
        statements.push({ text: 'COMMIT', tx });
        // Kept only while a later reset may still see its COMMIT.
        setTimeout(() => txTexts.delete(tx), 60_000).unref();
      });
    },
  });
  return {
    db: wrapped,
    log: {
      statements,
      reset: () => void statements.splice(0),
      except(isBackground) {
        const dropTx = new Set([...txTexts].filter(([, texts]) => texts.some(isBackground)).map(([tx]) => tx));
        return statements.filter((s) => !isBackground(s.text) && !(s.tx !== null && dropTx.has(s.tx))).map((s) => s.text);
      },
    },
  };
}

/**
 * The idle server's own upkeep, not a request's: job claims, pg-boss, the sandbox pool
 * keeper (its claims and its scan of the manifests that ask for a pool), the insights
 * projection's catch-up (every statement of it, or of its transaction, names its checkpoint).
 */
export const idleUpkeep = (text: string): boolean =>
  /\bjob_claims\b|\bpgboss\b|\bpool_sandboxes\b|->>'pool'|\binsight_checkpoint\b/.test(text);

/**
 * A server on a counting Db with no scheduler, app deploys or channel dispatcher polling
 * beside the request being counted, a fixture repository, a project on it and one open CR
 * of `files` on branch `topic`: the setup of the statement-count specs.
 */
export async function countedCrServer(slug: string, files: Record<string, string>, title = slug): Promise<{
  srv: TestServer;
  repo: FixtureRepo;
  log: StatementLog;
  projectId: string;
  crNumber: number;
}> {
  let log: StatementLog | undefined;
  const srv = await startTestServer({
    env: { SVC_SCHEDULER: '0', SVC_APPS: '0', SVC_CHANNELS_DISPATCH: '0' },
    wrapDb: (db) => {
      const c = countingDb(db);
      log = c.log;
      return c.db;
    },
  });
  const repo = await fixtureRepo();
  const api = client(srv.url, srv.token);
  const project = await api.post('/v1/projects', { name: slug, slug, repo_url: repo.url });
  if (project.status !== 201) throw new Error(`project ${slug}: ${project.status} ${JSON.stringify(project.body)}`);
  await repo.commit('topic', files);
  const cr = await api.post(`/v1/projects/${slug}/change-requests`, { title, head_ref: 'topic' });
  if (cr.status !== 201) throw new Error(`CR: ${cr.status} ${JSON.stringify(cr.body)}`);
  // The manifest follows main from its first tip read on (the open above): its sync is a job,
  // waited for here so that it never lands inside a counted request.
  const projectId = project.body.project.project_id as string;
  const main = repo.tip('main');
  await until(
    async () => (await srv.db.db.one<{ source_sha: string | null }>({ text: 'SELECT source_sha FROM project_manifests WHERE project_id = $1', values: [projectId] }))?.source_sha === main,
    'the manifest synced at main',
    { timeoutMs: 20_000 },
  );
  return { srv, repo, log: log!, projectId, crNumber: cr.body.change_request.number as number };
}
