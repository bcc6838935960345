import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { sandboxFetch, socketUrl } from '../../../lib/sandbox-dial.js';

/** How the server dials a sandbox's socket (lib/sandbox-dial.ts): no link followed, a socket or nothing. */
describe('isolation: dialling a sandbox socket', () => {
  let dir: string;
  let server: net.Server;
  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'svc-dial-'));
    server = net.createServer((s) => s.end('HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok'));
    await new Promise<void>((r) => server.listen(path.join(dir, 'other.sock'), () => r()));
  });
  after(() => {
    server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reaches a socket at its path', async () => {
    const res = await sandboxFetch(socketUrl(path.join(dir, 'other.sock')), '/');
    expect(await res.text()).to.equal('ok');
  });

  it('refuses a symlink to another socket, and a file that is not a socket', async () => {
    symlinkSync(path.join(dir, 'other.sock'), path.join(dir, 'daemon.sock'));
    const err = await sandboxFetch(socketUrl(path.join(dir, 'daemon.sock')), '/').then(() => null, (e: Error) => e);
    expect(err?.message).to.match(/is not a socket .*refused/);
    writeFileSync(path.join(dir, 'file.sock'), 'x');
    const err2 = await sandboxFetch(socketUrl(path.join(dir, 'file.sock')), '/').then(() => null, (e: Error) => e);
    expect(err2?.message).to.match(/is not a socket/);
  });

  it('refuses a socket directory that is itself a link', async () => {
    symlinkSync(dir, path.join(dir, 'linked-dir'));
    const err = await sandboxFetch(socketUrl(path.join(dir, 'linked-dir', 'other.sock')), '/').then(() => null, (e: Error & { code?: string }) => e);
    expect(err?.code).to.be.oneOf(['ELOOP', 'ENOTDIR']);
  });
});
