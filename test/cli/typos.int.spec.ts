import { expect } from 'chai';
import { runSvc, sandbox, type Sandbox } from './helpers.js';

/** Typos of subcommands and flags stay usage errors (exit 2), naming what was probably meant. */
describe('svc typo suggestions', () => {
  let sb: Sandbox;
  beforeEach(async () => {
    sb = await sandbox();
  });
  afterEach(() => sb.cleanup());
  const run = (args: string[]) => runSvc(args, { configPath: sb.configPath, cwd: sb.dir, env: {} });

  it('a subcommand one or two edits away: exit 2, "did you mean" the subcommand', async () => {
    for (const [args, near] of [
      [['sessions', 'stpo', 'x'], 'stop'],
      [['projects', 'creat', 'x'], 'create'],
      [['cr', 'mrege', '1'], 'merge'],
    ] as const) {
      const r = await run([...args]);
      expect(r.code, args.join(' ')).to.equal(2);
      expect(r.stderr.trim()).to.equal(`error: unknown command "${args[1]}" for "svc ${args[0]}"; did you mean "${near}"?`);
    }
    const far = await run(['sessions', 'zzzzzz']);
    expect(far.code).to.equal(2);
    expect(far.stderr).to.contain("run 'svc sessions --help'").and.not.contain('did you mean');
  });

  it("a flag one or two edits from one of the command's flags: exit 2, the flag named; a far one keeps yargs' message", async () => {
    const model = await run(['sessions', 'chat', '--modle', 'm']);
    expect(model.code).to.equal(2);
    expect(model.stderr.trim()).to.equal('error: unknown flag "--modle" for "svc sessions chat"; did you mean "--model"?');
    const json = await run(['cr', 'ls', '--jsno']);
    expect(json.code).to.equal(2);
    expect(json.stderr).to.contain('did you mean "--json"?');
    const far = await run(['cr', 'ls', '--zzzzzz']);
    expect(far.code).to.equal(2);
    expect(far.stderr).to.contain('Unknown argument: zzzzzz').and.not.contain('did you mean');
  });
});
