import { readFileSync } from 'node:fs';

/** Every TCP port in LISTEN state in this (the host's) network namespace, from /proc/net/tcp and tcp6. */
export function hostListeningPorts(): number[] {
  const ports = new Set<number>();
  for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(f, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols[3] !== '0A') continue; // LISTEN
      ports.add(parseInt(cols[1]!.split(':')[1]!, 16));
    }
  }
  return [...ports].sort((a, b) => a - b);
}

/**
 * Run with node inside a sandbox: connects to 127.0.0.1 on each port of argv[1] (comma
 * separated) and prints `{ answered, own, netns }`: the ports that accepted a connection
 * and are NOT the sandbox's own listeners (its daemon, runtime and gateway listen on
 * 8000, 4096 and 4080 of its own loopback: a host port with the same number proves
 * nothing either way), the sandbox's own listening ports (from its /proc/net/tcp), and its
 * network namespace. 1.5 s per attempt at most.
 */
export const PROBE_PORTS_JS = `
const fs = require('node:fs');
const net = require('node:net');
const own = new Set();
for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
  let t = '';
  try { t = fs.readFileSync(f, 'utf8'); } catch {}
  for (const l of t.split('\\n').slice(1)) { const c = l.trim().split(/\\s+/); if (c[3] === '0A') own.add(parseInt(c[1].split(':')[1], 16)); }
}
const ports = (process.argv[1] || '').split(',').filter(Boolean).map(Number).filter((p) => process.env.PROBE_INCLUDE_OWN || !own.has(p));
const one = (port) => new Promise((resolve) => {
  const s = net.connect({ host: '127.0.0.1', port });
  const done = (ok) => { s.destroy(); resolve(ok ? port : null); };
  s.once('connect', () => done(true));
  s.once('error', () => done(false));
  s.setTimeout(1500, () => done(false));
});
Promise.all(ports.map(one)).then((r) => console.log(JSON.stringify({ answered: r.filter((p) => p !== null), own: [...own].sort((a, b) => a - b), netns: fs.readlinkSync('/proc/self/ns/net') })));
`;
