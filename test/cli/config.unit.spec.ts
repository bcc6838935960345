import { expect } from 'chai';
import { mkdir, open, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { configPath, readConfig, updateConfig, writeConfig } from '../../cli/config.js';
import { sandbox, type Sandbox } from './helpers.js';

describe('cli config file', () => {
  let sb: Sandbox;
  beforeEach(async () => (sb = await sandbox()));
  afterEach(() => sb.cleanup());

  it('lives at ~/.config/svc/config.json, XDG_CONFIG_HOME, or SVC_CONFIG_FILE', () => {
    expect(configPath({}, '/home/ada')).to.equal('/home/ada/.config/svc/config.json');
    expect(configPath({ XDG_CONFIG_HOME: '/x' }, '/home/ada')).to.equal('/x/svc/config.json');
    expect(configPath({ SVC_CONFIG_FILE: '/tmp/c.json', XDG_CONFIG_HOME: '/x' }, '/home/ada')).to.equal('/tmp/c.json');
  });

  it('reads a missing file as empty', async () => {
    expect(await readConfig(sb.configPath)).to.deep.equal({ hosts: {} });
  });

  it('writes mode 0600 whatever the umask, creating the directory', async () => {
    const old = process.umask(0);
    try {
      await writeConfig(sb.configPath, { active_host: 'selfhost', hosts: { selfhost: { token: 'svc_pat_x' } } });
    } finally {
      process.umask(old);
    }
    expect((await stat(sb.configPath)).mode & 0o777).to.equal(0o600);
    expect((await stat(path.dirname(sb.configPath))).mode & 0o077).to.equal(0);
    expect(await readConfig(sb.configPath)).to.deep.equal({ active_host: 'selfhost', hosts: { selfhost: { token: 'svc_pat_x' } } });
  });

  it('replaces the file atomically: readers of the old file see it whole, no temp file is left', async () => {
    await writeConfig(sb.configPath, { hosts: { a: { url: 'http://a' } } });
    const before = await stat(sb.configPath);
    const oldHandle = await open(sb.configPath, 'r');
    try {
      await updateConfig(sb.configPath, (c) => {
        c.hosts.b = { url: 'http://b' };
      });
      // rename(2) swapped in a new inode; the old one is intact for whoever had it open.
      expect((await stat(sb.configPath)).ino).to.not.equal(before.ino);
      expect(JSON.parse(await oldHandle.readFile('utf8'))).to.deep.equal({ hosts: { a: { url: 'http://a' } } });
    } finally {
      await oldHandle.close();
    }
    expect(Object.keys((await readConfig(sb.configPath)).hosts)).to.deep.equal(['a', 'b']);
    expect(await readdir(path.dirname(sb.configPath))).to.deep.equal(['config.json']);
  });

  it('tightens a pre-existing loose file on the next write', async () => {
    await mkdir(path.dirname(sb.configPath), { recursive: true });
    await writeFile(sb.configPath, '{"hosts":{}}', { mode: 0o644 });
    await updateConfig(sb.configPath, (c) => (c.active_host = 'cloud'));
    expect((await stat(sb.configPath)).mode & 0o777).to.equal(0o600);
  });

  it('rejects a file that is not JSON with a message naming it', async () => {
    await mkdir(path.dirname(sb.configPath), { recursive: true });
    await writeFile(sb.configPath, 'not json');
    try {
      await readConfig(sb.configPath);
      expect.fail('should throw');
    } catch (e) {
      expect((e as Error).message).to.contain(sb.configPath);
    }
    expect(await readFile(sb.configPath, 'utf8')).to.equal('not json');
  });
});
