import { expect } from 'chai';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../lib/paths.js';
import { runSvc, sandbox, type Sandbox } from '../cli/helpers.js';
import { withSessionProject } from '../support/sessions.js';
import { skipUnlessCi } from '../support/skip.js';

/**
 * `svc sessions chat --new --prompt` against the real `opencode serve`. With no model
 * configured it answers as far as it can: the prompt is taken (its user message comes
 * back on the event stream) and the turn ends, idle or with the runtime's error, which
 * the CLI reports; it never hangs.
 */
describe('svc sessions chat with the real opencode runtime (e2e)', function () {
  this.timeout(240_000);
  const opencode = path.join(projectRoot, 'node_modules', '.bin', 'opencode');
  let sb: Sandbox;
  before(function () {
    if (!existsSync(opencode)) skipUnlessCi(this, `${opencode} is not installed`);
  });
  beforeEach(async () => (sb = await sandbox()));
  afterEach(() => sb?.cleanup());

  it('streams the turn as JSON lines and ends it', () =>
    withSessionProject({ slug: 'oc', env: { SVC_AGENT_RUNTIME: opencode } }, async (p) => {
      const r = await runSvc(['sessions', 'chat', '--new', '--prompt', 'say hello', '--json'], {
        configPath: sb.configPath,
        cwd: sb.dir,
        env: { SVC_API_URL: `${p.srv.url}/v1`, SVC_CLI_TOKEN: p.srv.token, SVC_PROJECT_ID: 'oc' },
      });
      const events = r.stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as { type: string; properties: Record<string, unknown> });
      expect(events.length, r.stderr).to.be.greaterThan(0);
      expect(events.some((e) => e.type === 'message.updated')).to.equal(true);
      if (r.code === 0) {
        const last = events.at(-1)!;
        expect(last.type === 'session.idle' || (last.type === 'session.status' && (last.properties.status as { type: string }).type === 'idle')).to.equal(true);
      } else {
        expect(r.code).to.equal(1);
        expect(r.stderr).to.match(/error: the agent failed: /);
      }
    }));
});
