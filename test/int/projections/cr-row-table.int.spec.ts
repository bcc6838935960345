import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { createTestDb, type TestDb } from '../../support/db.js';
import { CR_COLUMNS, decodeCrRow, encodeCrRow, type CrRow } from '../../../sql/queries/change-request-row.js';
import { crQueries } from '../../../sql/queries/change-requests.js';
import { insertProjects } from '../../../bench/support/cr-events.js';

/**
 * The CR row's one column table against the database: a migration that adds, drops,
 * reorders or retypes a `change_requests` column fails here until the table says so (every
 * CR statement builds its column lists from it).
 */
describe('the change_requests column table', () => {
  let t: TestDb;
  before(async () => {
    t = await createTestDb();
  });
  after(async () => t.drop());

  it('lists exactly the table columns, in table order, with their types', async () => {
    const cols = await t.db.rows<{ name: string; type: string }>({
      text: `SELECT a.attname AS name, format_type(a.atttypid, NULL) AS type FROM pg_attribute a
        WHERE a.attrelid = 'change_requests'::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`,
      values: [],
    });
    const short: Record<string, string> = { 'timestamp with time zone': 'timestamptz' };
    expect(cols.map((c) => [c.name, short[c.type] ?? c.type])).to.deep.equal(Object.entries(CR_COLUMNS));
  });

  it('a row encoded, written and read back decodes to itself', async () => {
    const [p] = await t.db.transaction((tx) => insertProjects(tx, 1, 'rowtable'));
    const row: CrRow = {
      cr_id: randomUUID(), account_id: p!.accountId, project_id: p!.projectId, number: 7, title: 'T', description: 'D',
      base_ref: 'main', head_ref: 'feature/x', status: 'merged', head_commit_sha: 'a'.repeat(40), base_commit_sha: 'b'.repeat(40),
      origin_session_id: null, created_by: p!.userId, merged_at: '2026-11-25T10:00:00.123Z', merged_by: p!.userId,
      merge_commit_sha: 'c'.repeat(40), closed_at: null, closed_by: null, metadata: { k: [1, 'two'] },
      created_at: '2026-11-25T09:00:00.000Z', updated_at: '2026-11-25T10:00:00.123Z', stream_version: 3, parent_cr_id: randomUUID(),
    };
    expect(Object.keys(encodeCrRow(row))).to.deep.equal(Object.keys(CR_COLUMNS));
    await t.db.run(crQueries.insertMany('change_requests', [row]));
    const back = await t.db.one<Record<string, unknown>>(crQueries.byId(p!.projectId, row.cr_id));
    expect(decodeCrRow(back!)).to.deep.equal(row);
  });
});
