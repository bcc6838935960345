import { expect } from 'chai';
import { existsSync, statSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parse } from 'smol-toml';
import { runSvc, sandbox, type Sandbox } from './helpers.js';
import { templates } from '../../cli/scaffold/templates.js';
import { SKILL_MD } from '../../cli/scaffold/skill.js';
import { gitOk, gitEnv } from '../support/git-client.js';

describe('svc init and svc <project-name>', function () {
  this.timeout(60_000);
  let sb: Sandbox;
  let dir: string;
  const env = () => gitEnv({ HOME: sb.home });
  const run = (args: string[], cwd = dir) => runSvc(args, { configPath: sb.configPath, env: env(), cwd });

  beforeEach(async () => {
    sb = await sandbox();
    dir = path.join(sb.dir, 'app');
    await mkdir(dir);
  });
  afterEach(() => sb.cleanup());

  it('writes the scaffold (git init included), never the link file; a second run is a no-op', async () => {
    const first = await run(['init']);
    expect(first.code, first.stderr).to.equal(0);
    for (const t of templates()) expect(await readFile(path.join(dir, t.path), 'utf8'), t.path).to.equal(t.content);
    expect(existsSync(path.join(dir, 'AGENTS.md'))).to.equal(true);
    expect(existsSync(path.join(dir, '.git'))).to.equal(true);
    expect(existsSync(path.join(dir, '.svc', 'link.json'))).to.equal(false);
    expect(statSync(path.join(dir, '.svc/agent/skills/svc/scripts/open-cr.sh')).mode & 0o111).to.not.equal(0);
    expect(first.stderr).to.contain('created   svc.toml');

    const second = await run(['init', '--json']);
    expect(second.code).to.equal(0);
    const files = JSON.parse(second.stdout).files as Array<{ path: string; action: string }>;
    expect(files.every((x) => x.action === 'unchanged'), JSON.stringify(files)).to.equal(true);
    expect(existsSync(path.join(dir, '.svc', 'link.json'))).to.equal(false);
  });

  it('keeps the link file out of git (.gitignore, appended once) and says when the directory is inside another repository', async () => {
    await writeFile(path.join(sb.dir, '.gitignore'), 'node_modules/\n');
    await gitOk(sb.dir, ['init', '-q', '-b', 'main'], { env: env() });
    const nested = await run(['init']);
    expect(nested.code, nested.stderr).to.equal(0);
    expect(nested.stderr).to.contain(`is inside the git repository`);
    expect(await readFile(path.join(dir, '.gitignore'), 'utf8')).to.equal('.svc/link.json\n');
    await writeFile(path.join(dir, '.gitignore'), 'dist/');
    await run(['init']);
    await run(['init']);
    expect(await readFile(path.join(dir, '.gitignore'), 'utf8')).to.equal('dist/\n.svc/link.json\n');
  });

  it("keeps the user's edits; --force restores the template", async () => {
    await run(['init']);
    await writeFile(path.join(dir, 'svc.toml'), '# mine\n');
    const again = await run(['init']);
    expect(again.code).to.equal(0);
    expect(again.stderr).to.match(/kept\s+svc\.toml \(you edited it; --force restores the template\)/);
    expect(await readFile(path.join(dir, 'svc.toml'), 'utf8')).to.equal('# mine\n');
    const forced = await run(['init', '--force']);
    expect(forced.code).to.equal(0);
    expect(forced.stderr).to.match(/restored\s+svc\.toml/);
    expect(await readFile(path.join(dir, 'svc.toml'), 'utf8')).to.equal(templates()[0]!.content);
  });

  it("appends the pointer to an existing AGENTS.md once, keeping the user's text", async () => {
    await writeFile(path.join(dir, 'AGENTS.md'), '# House rules\n\nBe kind.\n');
    await run(['init']);
    await run(['init']);
    const text = await readFile(path.join(dir, 'AGENTS.md'), 'utf8');
    expect(text.startsWith('# House rules\n\nBe kind.\n')).to.equal(true);
    expect(text.split('<!-- svc:agent-contract -->')).to.have.length(2);
    expect(text).to.contain('.svc/agent/skills/svc/SKILL.md');
  });

  it('svc.toml is valid TOML with the [agent] config dir, [env], a disabled trigger and an [[apps]] example', async () => {
    const text = templates()[0]!.content;
    const toml = parse(text) as Record<string, any>;
    expect(toml.agent).to.deep.equal({ config_dir: '.svc/agent' });
    expect(toml.env).to.deep.equal({ required: [] });
    expect(toml.triggers).to.have.length(1);
    expect(toml.triggers[0].enabled).to.equal(false);
    expect(text).to.contain('# [[apps]]');
    // It builds on the image the install makes (the docker provider passes it as the arg), not a registry tag.
    const dockerfile = templates().find((t) => t.path === '.svc/Dockerfile')!.content;
    expect(dockerfile).to.match(/^ARG SVC_SANDBOX_IMAGE=svc-sandbox:local$/m);
    expect(dockerfile).to.match(/^FROM \$\{SVC_SANDBOX_IMAGE\}$/m);
  });

  it('the skill states the whole agent contract', () => {
    for (const phrase of [
      '$SVC_BRANCH_NAME',
      'small working commits',
      'git push origin HEAD',
      'svc cr open',
      'Show the CR number to the user',
      '$SVC_DASHBOARD_URL',
      '**Stop.**',
      'You never merge your own CR',
      'svc cr merge <n>',
      'no `git push --force`',
      'No exception',
      'Every committed file goes through a CR',
      'new skills, agents',
      '.svc/agent/skills/<name>/SKILL.md',
      '.svc/agent/agents/<agent>.md',
      'only after the CR containing them merges',
      '`[[triggers]]`',
      '`[[apps]]`',
      'CRs do not move them',
      'trigger opens its CR by the same flow',
      'Force-pushing the default branch',
      'Leaving work only on the session branch',
      'tarball, a paste or a gist',
      'git pull origin <base_ref>',
      'Resolve the conflicts locally',
      'svc cr show <n>',
      'Do not merge to force the resolution',
      // Stacks: when, how to name the branches, and --base.
      'split it into a **stack**',
      '`$SVC_BRANCH_NAME-<n>` (n from 1 to 20',
      'svc cr open --head "$SVC_BRANCH_NAME-1" --base "$SVC_BRANCH_NAME"',
      'Without `--base` a CR is based on the default branch',
      'You never change a CR\'s base',
      'svc cr stack <n>',
    ]) {
      expect(SKILL_MD.replace(/\s+/g, ' ').toLowerCase(), phrase).to.contain(phrase.toLowerCase());
    }
    expect(SKILL_MD).to.match(/^---\nname: svc\ndescription: .+\n---\n/);
  });

  it("the next steps match the repository: a clone of a path pushes and creates the project there (the README's step 3); no remote ships", async () => {
    const bare = path.join(sb.dir, 'repos', 'demo.git');
    await mkdir(path.dirname(bare), { recursive: true });
    await gitOk(sb.dir, ['init', '-q', '--bare', '-b', 'main', bare], { env: env() });
    const clone = path.join(sb.dir, 'demo');
    await gitOk(sb.dir, ['clone', '-q', bare, clone], { env: env() });
    const cloned = await run(['init'], clone);
    expect(cloned.code, cloned.stderr).to.equal(0);
    const next = cloned.stderr.slice(cloned.stderr.indexOf('Next:'));
    expect(next).to.contain('git push origin HEAD:main');
    expect(next).to.contain(`svc projects create demo --repo-url "file://${bare}"`);
    expect(next).to.contain('svc projects link demo');
    expect(next).to.not.contain('svc ship');

    const plain = await run(['init']);
    expect(plain.stderr).to.contain('Next: git add -A && git commit -m "svc init" && svc ship');
  });

  it('svc <project-name> scaffolds a new directory with git init; a second time it refuses', async () => {
    const r = await run(['my-app'], sb.dir);
    expect(r.code, r.stderr).to.equal(0);
    const made = path.join(sb.dir, 'my-app');
    expect(await gitOk(made, ['symbolic-ref', 'HEAD'])).to.equal('refs/heads/main');
    expect(existsSync(path.join(made, '.svc/agent/skills/svc/SKILL.md'))).to.equal(true);
    expect(existsSync(path.join(made, '.claude/skills/svc/SKILL.md'))).to.equal(true);
    expect(existsSync(path.join(made, '.opencode/skill/svc/SKILL.md'))).to.equal(true);
    expect(r.stderr).to.contain('cd my-app && git add -A && git commit -m init && svc ship');
    const again = await run(['my-app'], sb.dir);
    expect(again.code).to.equal(1);
    expect(again.stderr).to.contain('already exists and is not empty');
  });

  it('a typo of a command stays a usage error with a suggestion (exit 2)', async () => {
    for (const [typo, near] of [['shpi', 'ship'], ['lgin', 'login'], ['projcts', 'projects'], ['inti', 'init']]) {
      const r = await run([typo!], sb.dir);
      expect(r.code, typo).to.equal(2);
      expect(r.stderr).to.equal(`error: unknown command "${typo}" for "svc"; did you mean "${near}"?\n`);
      expect(existsSync(path.join(sb.dir, typo!))).to.equal(false);
    }
    const bad = await run(['no/slashes'], sb.dir);
    expect(bad.code).to.equal(2);
  });
});
