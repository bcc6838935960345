import { expect } from 'chai';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

const serverBin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../ops/svc-server.js');
const help = async (...args: string[]) => (await promisify(execFile)(process.execPath, [serverBin, ...args, '--help'])).stdout;

describe('svc-server --help (yargs)', () => {
  it("the admin summary names every admin action yargs accepts", async () => {
    const out = await help('admin');
    const choices = /\[choices: ([^\]]+)\]/.exec(out)?.[1]?.match(/"[^"]+"/g)?.map((c) => c.slice(1, -1)) ?? [];
    expect(choices).to.include.members(['bootstrap', 'set-password', 'rotate-key']);
    const summary = /administration: .*/.exec(out)?.[0] ?? '';
    for (const action of choices) expect(summary, action).to.contain(action);
    const top = (await help()).replace(/\s+/g, ' ');
    for (const action of choices) expect(top, action).to.contain(action);
  });
});
