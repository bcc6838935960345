import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { allPids, carriesEnv, childrenOf, parseStat, pidsCarryingEnv, procStat, readSelfCgroups, runsSince } from '../../../lib/proc.js';
import { eventually } from '../../support/wait.js';

describe('lib/proc: what the server reads from /proc', function () {
  this.timeout(10_000);
  let child: ChildProcess | undefined;
  afterEach(() => {
    child?.kill('SIGKILL');
    child = undefined;
  });

  it('parses a stat line whose command holds spaces and parentheses', () => {
    const line = '4242 (evil) S 1 (x) R 17 4242 4242 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 987654 1 1 1 1 1 1 1';
    expect(parseStat(line)).to.deep.equal({ state: 'R', ppid: 17, startTime: '987654' });
  });

  it("this process: its stat, its parent, and a start time a recycled pid would not share", () => {
    const st = procStat(process.pid)!;
    expect(st.ppid).to.equal(process.ppid);
    expect(runsSince(process.pid, st.startTime)).to.equal(true);
    expect(runsSince(process.pid, `${st.startTime}1`)).to.equal(false);
    expect(procStat(2 ** 22 + 1), 'no such pid').to.equal(undefined);
    expect(allPids()).to.include(process.pid);
    expect(readSelfCgroups()).to.be.a('string');
  });

  it('finds a child by its parent and by its environment tag, never by a tag that only ends the same, never itself', async () => {
    const id = randomUUID();
    const other = randomUUID();
    child = spawn('sleep', ['30'], { env: { PATH: process.env.PATH, SVC_SANDBOX_ID: id, XSVC_SANDBOX_ID: other } });
    const pid = child.pid!;
    await eventually(() => childrenOf(process.pid).includes(pid), 'the child listed under its parent');
    expect(await carriesEnv(pid, `SVC_SANDBOX_ID=${id}`)).to.equal(true);
    expect(await carriesEnv(pid, `SVC_SANDBOX_ID=${id.slice(0, -1)}`), 'a prefix of the value is another tag').to.equal(false);
    expect(await carriesEnv(pid, `SVC_SANDBOX_ID=${other}`), "XSVC_SANDBOX_ID is another variable").to.equal(false);
    expect(await pidsCarryingEnv(`SVC_SANDBOX_ID=${id}`)).to.deep.equal([pid]);
    expect(await pidsCarryingEnv(`SVC_SANDBOX_ID=${other}`)).to.deep.equal([]);
  });
});
