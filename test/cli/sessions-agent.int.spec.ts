import { expect } from 'chai';
import nock from 'nock';
import { useNock } from './nock-scope.js';
import { PROJECT, runSvc, sandbox, type Sandbox } from './helpers.js';

const API = 'http://api.agent.test:8080';
const TOKEN = 'svc_pat_agent';
const P = PROJECT.project_id;
const errorLines = (stderr: string) => stderr.split('\n').filter((l) => l.startsWith('error'));

/** `svc sessions new --agent X` refused by the server: exit 2 and one line, whatever shape the 400 has. */
describe('svc sessions new --agent: the server refuses the name (HTTP stubbed with nock)', () => {
  let sb: Sandbox;
  const env = { SVC_API_URL: `${API}/v1`, SVC_CLI_TOKEN: TOKEN, SVC_PROJECT_ID: P };
  const api = () => nock(API, { reqheaders: { authorization: `Bearer ${TOKEN}` } });
  const run = (args: string[]) => runSvc(args, { configPath: sb.configPath, env, cwd: sb.dir });

  useNock();
  beforeEach(async () => (sb = await sandbox()));
  afterEach(() => sb.cleanup());

  it("a validator's 400 with two issues on agent: the first issue's message, one line", async () => {
    const issues = [
      { path: 'agent', message: 'Too small: expected string to have >=1 characters' },
      { path: 'agent', message: 'Invalid string: must match pattern /^[A-Za-z0-9._-]+$/' },
    ];
    api()
      .post(`/v1/projects/${P}/sessions`)
      .reply(400, { error: 'Validation failed', message: issues.map((i) => `${i.path}: ${i.message}`).join('; '), issues });
    const r = await run(['sessions', 'new', '--agent', '../x', '--no-wait']);
    expect(r.code).to.equal(2);
    expect(r.stdout).to.equal('');
    expect(errorLines(r.stderr)).to.deep.equal(['error: --agent: Too small: expected string to have >=1 characters']);
  });

  it("the server's own sentence (unknown agent, naming the choices) is printed as it is", async () => {
    const message = "Unknown agent 'nope': use build, plan or one defined at .svc/agent/agents/<name>.md on main.";
    api()
      .post(`/v1/projects/${P}/sessions`)
      .reply(400, { error: 'Validation failed', message, issues: [{ path: 'agent', message: 'unknown agent; use build, plan or one defined at .svc/agent/agents/<name>.md on main' }] });
    const r = await run(['sessions', 'new', '--agent', 'nope', '--no-wait']);
    expect(r.code).to.equal(2);
    expect(errorLines(r.stderr)).to.deep.equal([`error: --agent: ${message}`]);
  });
});
