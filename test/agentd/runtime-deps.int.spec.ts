import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { isOpencode, markRuntimeDepsInstalled } from '../../agentd/runtime-deps.js';
import { tempDir } from './support/harness.js';

/** opencode's config-dir dependency install (a download at every sandbox boot) is marked done, in a workspace left clean. */
describe('agentd: the runtime config dir needs no download', () => {
  it('marks an empty config dir installed (node_modules, package.json and a lock naming the plugin), gitignored', async () => {
    const t = tempDir();
    try {
      const ws = path.join(t.dir, 'ws');
      mkdirSync(ws);
      execFileSync('git', ['init', '-q', ws]);
      const dir = path.join(ws, '.svc', 'agent');
      expect(await markRuntimeDepsInstalled(dir)).to.equal('marked');
      expect(existsSync(path.join(dir, 'node_modules'))).to.equal(true);
      const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
      const lock = JSON.parse(readFileSync(path.join(dir, 'package-lock.json'), 'utf8'));
      expect(Object.keys(pkg.dependencies)).to.deep.equal(['@opencode-ai/plugin']);
      expect(Object.keys(lock.packages[''].dependencies)).to.deep.equal(Object.keys(pkg.dependencies));
      expect(execFileSync('git', ['-C', ws, 'status', '--porcelain'], { encoding: 'utf8' })).to.equal('');
      expect(await markRuntimeDepsInstalled(dir)).to.equal('kept');

      // A repo with its own .gitignore there (not listing them): still not committable.
      const ws2 = path.join(t.dir, 'ws2');
      mkdirSync(path.join(ws2, '.svc', 'agent'), { recursive: true });
      execFileSync('git', ['init', '-q', ws2]);
      writeFileSync(path.join(ws2, '.svc', 'agent', '.gitignore'), 'tmp/\n');
      expect(await markRuntimeDepsInstalled(path.join(ws2, '.svc', 'agent'), ws2)).to.equal('marked');
      expect(execFileSync('git', ['-C', ws2, 'status', '--porcelain', '--untracked-files=all'], { encoding: 'utf8' })).to.equal('?? .svc/agent/.gitignore\n');
      expect(readFileSync(path.join(ws2, '.git', 'info', 'exclude'), 'utf8')).to.include('/.svc/agent/package.json\n');

      // A repo that declares its own dependencies keeps them (opencode installs those).
      const own = path.join(t.dir, 'own');
      mkdirSync(own);
      writeFileSync(path.join(own, 'package.json'), '{"dependencies":{"left-pad":"1.3.0"}}');
      expect(await markRuntimeDepsInstalled(own)).to.equal('kept');
      expect(existsSync(path.join(own, 'node_modules'))).to.equal(false);
      expect(readFileSync(path.join(own, 'package.json'), 'utf8')).to.include('left-pad');
    } finally {
      t.cleanup();
    }
  });

  it('only for opencode', () => {
    expect(isOpencode('/app/node_modules/.bin/opencode')).to.equal(true);
    expect(isOpencode('opencode')).to.equal(true);
    expect(isOpencode('/x/fake-runtime.js')).to.equal(false);
  });
});
