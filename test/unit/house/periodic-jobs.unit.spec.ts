import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../../lib/paths.js';
import { tsFilesUnder } from './layers.js';

/**
 * Every periodic job of the server lives under workers/, on its supervisor
 * (workers/supervisor.ts: interval with jitter, backoff, leader election, metrics). The
 * server's other rooms hold no loop of their own: no `setInterval`, and no `setTimeout`
 * that schedules work (re-arms a pass, pumps, ticks). What a timer may do there: sleep (the
 * callback is a promise's resolve) or end something at a deadline (reject, destroy, kill,
 * abort, close, forget an entry). Per-connection timers of the API role stay in api/
 * (not scanned); agentd/ and cli/ are other programs.
 */
const SCANNED = ['services', 'infra', 'projections', 'sql', 'domain', 'lib', 'ops', 'contracts'];

/** Files still allowed a loop, each with why. An entry that no longer has one fails, so the list only shrinks. */
const ALLOWED: Record<string, string> = {
  'infra/queue.ts':
    "the job queue adapter's own consumer: each process polls its queues for jobs and rescues its stuck claims, as pg-boss itself polls; it is no server-wide job (every process runs its own, for its own work)",
  'ops/wiring/gateway.ts':
    "one sandbox socket's own timers, like a connection's: a refusal answered after its delay, and the socket's connection cap restored once the descriptor budget has room again; they live and die with that socket, no server-wide job",
};

/** A timer's callback that only sleeps or ends something at a deadline. */
const SLEEP = /^\s*(?:r|res|resolve|done|wake)\s*,/;
const DEADLINE = /^\s*\(\)\s*=>\s*\{?\s*(?:void\s+)?[\w.$]*\b(?:r|res|resolve|reject|destroy|kill|abort|close|closeAllConnections|delete|end)\(/;

/** The loops a source holds: `line: text` of every `setInterval` and every `setTimeout` that schedules work. */
export function loopsOf(source: string): string[] {
  const out: string[] = [];
  const lines = source.split('\n');
  lines.forEach((line, i) => {
    const code = line.replace(/\/\/.*$/, '');
    if (/^\s*\*/.test(code)) return; // a doc comment
    for (const m of code.matchAll(/(\.?)\b(setInterval|setTimeout)\s*\(/g)) {
      if (m[1] === '.') continue; // a socket's or a request's own idle timeout (`socket.setTimeout`)
      if (m[2] === 'setInterval') {
        out.push(`${i + 1}: ${line.trim()}`);
        continue;
      }
      const rest = code.slice(m.index! + m[0].length);
      if (!SLEEP.test(rest) && !DEADLINE.test(rest)) out.push(`${i + 1}: ${line.trim()}`);
    }
  });
  return out;
}

/** The negative fixture: loops the rule must find. */
const LOOPS: Record<string, string> = {
  'services/x.ts': 'const timer = setInterval(() => void tick(), 1000);',
  'infra/y.ts': '  timer = setTimeout(loop, intervalMs);',
  'lib/z.ts': 'this.timer = setTimeout(() => void this.tick(), ms);',
  'ops/w.ts': 'setTimeout(() => w.pump(), 1100).unref();',
  'projections/v.ts': 'const t = setInterval(sweep, 60_000); t.unref();',
};
/** Timers that are no loop. */
const NO_LOOP: Record<string, string> = {
  'services/a.ts': 'await new Promise((r) => setTimeout(r, 50));',
  'infra/b.ts': "const timer = setTimeout(() => r.destroy(new Error('timed out')), left);",
  'lib/c.ts': "timer = setTimeout(() => child.kill('SIGKILL'), ms);",
  'infra/d.ts': 'return Promise.race([p, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error("x")), ms)))]);',
  'infra/e.ts': 'socket.setTimeout(idleMs, () => socket.destroy());',
  'services/f.ts': '// a comment naming setInterval( is no loop\n * and setInterval(x) in a doc comment neither',
  'infra/g.ts': 'setTimeout(() => outputs.delete(id), 60_000).unref();',
};

describe('house: every periodic job of the server lives under workers/', () => {
  it('fails on the negative fixture: every loop is found', () => {
    for (const [file, src] of Object.entries(LOOPS)) expect(loopsOf(src), file).to.have.length(1);
  });

  it('passes sleeps, deadlines and sockets\' own timeouts', () => {
    for (const [file, src] of Object.entries(NO_LOOP)) expect(loopsOf(src), file).to.deep.equal([]);
  });

  it('the source tree: no loop in services/, infra/ and the other server rooms outside the allow-list', () => {
    const files = SCANNED.flatMap(tsFilesUnder);
    expect(files).to.include.members(['services/sessions/pool.ts', 'infra/git/maintenance.ts']);
    const found: Record<string, string[]> = {};
    for (const f of files) {
      const loops = loopsOf(readFileSync(path.join(projectRoot, f), 'utf8'));
      if (loops.length > 0) found[f] = loops;
    }
    const unexpected = Object.fromEntries(Object.entries(found).filter(([f]) => !(f in ALLOWED)));
    expect(unexpected, 'a periodic job belongs in workers/, on workers/supervisor.ts').to.deep.equal({});
    const stale = Object.keys(ALLOWED).filter((f) => !(f in found));
    expect(stale, 'allow-list entries that hold no loop any more; remove them').to.deep.equal([]);
  });

  it('every job under workers/ runs on the supervisor (no timer of its own)', () => {
    const jobs = tsFilesUnder('workers').filter((f) => f !== 'workers/supervisor.ts');
    const own = jobs.filter((f) => /\b(setInterval|setTimeout)\s*\(/.test(readFileSync(path.join(projectRoot, f), 'utf8')));
    expect(own).to.deep.equal([]);
    for (const f of ['workers/sandbox-pool-keeper.ts', 'workers/channel-dispatcher.ts', 'workers/checks-refresher.ts', 'workers/trigger-scheduler.ts', 'workers/repository-maintenance.ts']) {
      expect(readFileSync(path.join(projectRoot, f), 'utf8'), f).to.match(/\bsupervise\(/);
    }
  });
});
