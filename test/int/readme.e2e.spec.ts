import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { projectRoot } from '../../lib/paths.js';
import { probeBwrap } from '../../infra/sandbox/bwrap.js';
import { bashStep as bashCall, startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { spawnTestServer, traversableTempDir, type SpawnedServer } from '../support/server.js';
import { skipUnlessCi } from '../support/skip.js';

/**
 * The README's quick start, run as a new user would: every shell block of "## Quick start"
 * in order, in one bash, in a fresh HOME, with `svc` and `svc-server` on PATH (wrappers
 * over this checkout's dist/). A block preceded by `<!-- readme-test: skip: why -->` is not
 * run; the one marked `server` is started by the test with its variables (the upstream
 * being the scripted model, which plays the agent: edit, commit, push, `svc cr open`). The
 * only rewrite: `http://localhost:8080` becomes the server's address. The default sandbox
 * provider (bwrap) and the embedded PostgreSQL are used, as the README says.
 */

const README = path.join(projectRoot, 'README.md');
const K = 'sk-readme-upstream-key';

export interface ReadmeBlock {
  /** 1-based line of the opening fence. */
  line: number;
  code: string;
  mode: 'run' | 'skip' | 'server';
  why: string;
}

/** The `sh` blocks of the README's "## Quick start" section, with how the test treats each. */
export function quickStartBlocks(markdown: string): ReadmeBlock[] {
  const lines = markdown.split('\n');
  const start = lines.findIndex((l) => l === '## Quick start');
  const end = lines.findIndex((l, i) => i > start && /^## /.test(l));
  const out: ReadmeBlock[] = [];
  for (let i = start; i < (end < 0 ? lines.length : end); i++) {
    if (lines[i] !== '```sh') continue;
    const close = lines.indexOf('```', i + 1);
    const marker = /^<!-- readme-test: (skip|server): (.+) -->$/.exec(lines[i - 1] ?? '');
    out.push({ line: i + 1, code: lines.slice(i + 1, close).join('\n'), mode: marker ? (marker[1] as 'skip' | 'server') : 'run', why: marker?.[2] ?? '' });
    i = close;
  }
  return out;
}

/** `VAR=value \` lines of the server block, then the command. */
function serverVariables(code: string): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const m of code.matchAll(/^([A-Z_][A-Z0-9_]*)=(\S+)\s*\\?$/gm)) vars[m[1]!] = m[2]!;
  return vars;
}

function bash(script: string, env: NodeJS.ProcessEnv, cwd: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const p = spawn('bash', ['-c', script], { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (c: Buffer) => (out += c.toString()));
    p.stderr.on('data', (c: Buffer) => (out += c.toString()));
    p.on('close', (code) => resolve({ code, out }));
  });
}

describe('the README\'s quick start, run top to bottom (e2e)', function () {
  this.timeout(600_000);
  const opencode = path.join(projectRoot, 'node_modules', '.bin', 'opencode');
  let model: ScriptedModel;
  let srv: SpawnedServer | undefined;
  let root: string;

  before(async function () {
    if (!existsSync(opencode)) skipUnlessCi(this, `${opencode} is not installed`);
    const probe = probeBwrap();
    if (!probe.ok) skipUnlessCi(this, `bwrap (the README's default provider): ${probe.reason}`);
    model = await startScriptedModel({
      key: K,
      models: ['gpt-4.1-mini'],
      script: [
        bashCall("printf '\\n## Greetings\\n\\nHello from the agent.\\n' >> README.md && git add README.md && git commit -q -m 'Add a greetings section' && echo committed"),
        bashCall('git push -q origin HEAD && echo pushed'),
        bashCall('svc cr open --title "Add a greetings section" --json'),
        { text: 'Opened a change request with the greetings section.' },
      ],
    });
    root = await traversableTempDir('svc-readme-');
  });
  after(async () => {
    await srv?.stop();
    await model?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('the blocks parse: the install is skipped, the server is started by the test, the rest run', async () => {
    const blocks = quickStartBlocks(await readFile(README, 'utf8'));
    expect(blocks.map((b) => b.mode)).to.include.members(['skip', 'server', 'run']);
    expect(blocks.filter((b) => b.mode === 'server')).to.have.length(1);
    for (const b of blocks.filter((x) => x.mode !== 'run')) expect(b.why, `block at README.md:${b.line}`).to.not.equal('');
  });

  it('a new user gets from a fresh HOME to a CR the agent opened, merged by them', async () => {
    const blocks = quickStartBlocks(await readFile(README, 'utf8'));
    const home = path.join(root, 'home');
    const checkout = path.join(root, 'checkout');
    const bin = path.join(root, 'bin');
    const dataDir = path.join(checkout, '.svc-data');
    for (const d of [home, checkout, bin]) await mkdir(d, { recursive: true });
    for (const [name, entry] of [['svc', 'dist/cli/main.js'], ['svc-server', 'dist/ops/svc-server.js']] as const) {
      await writeFile(path.join(bin, name), `#!/bin/sh\nexec "${process.execPath}" "${path.join(projectRoot, entry)}" "$@"\n`);
      await chmod(path.join(bin, name), 0o755);
    }
    // A new user's git knows who they are.
    await writeFile(path.join(home, '.gitconfig'), '[user]\n\tname = You\n\temail = you@example.com\n[init]\n\tdefaultBranch = main\n');

    const server = blocks.find((b) => b.mode === 'server')!;
    expect(server.code).to.match(/\bnpm start\b/);
    const vars = serverVariables(server.code);
    expect(Object.keys(vars)).to.include.members(['SVC_ALLOW_FILE_REPOS', 'SVC_LLM_UPSTREAM_URL', 'SVC_LLM_UPSTREAM_KEY', 'SVC_LLM_MODEL']);
    srv = await spawnTestServer({
      ...vars,
      SVC_LLM_UPSTREAM_URL: model.url,
      SVC_LLM_UPSTREAM_KEY: K,
      // The README's defaults, not the test suite's: bwrap, the embedded database in the data dir.
      SVC_SANDBOX_PROVIDER: '',
      SVC_ALLOW_UNISOLATED: '',
      DATABASE_URL: '',
      SVC_DATA_DIR: dataDir,
      SVC_AGENT_RUNTIME: '',
      SVC_SESSION_PROVISION_TIMEOUT_SECONDS: '240',
    }, 'start', { readyMs: 120_000 });
    expect(srv.output()).to.match(/bwrap/);

    const runnable = blocks.filter((b) => b.mode === 'run');
    const script = [
      'set -eo pipefail',
      ...runnable.map((b) => `echo "::README.md:${b.line}:: $(date +%s%3N)"\n${b.code.replaceAll('http://localhost:8080', srv!.url)}`),
      // The test's own epilogue: what the user now has, then no sandbox outlives the test
      // (a server stop leaves sandboxes running, by design).
      `svc cr show 1 --json > ${JSON.stringify(path.join(root, 'final.json'))}`,
      'for id in $(svc sessions ls --json | node -e \'let s="";process.stdin.on("data",(c)=>s+=c).on("end",()=>{for(const x of JSON.parse(s))console.log(x.session_id)})\'); do svc sessions rm "$id" --yes; done',
    ].join('\n');
    const env: NodeJS.ProcessEnv = {
      PATH: `${bin}:${path.dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`,
      HOME: home,
      LANG: 'C.UTF-8',
      SVC_DATA_DIR: dataDir,
    };
    const t0 = Date.now();
    const r = await bash(script, env, checkout);
    // Where the time went, block by block (for the closing note; nothing asserts on it).
    const marks = [...r.out.matchAll(/::README\.md:(\d+):: (\d+)/g)].map((m) => ({ line: m[1]!, at: Number(m[2]) }));
    console.log(`      ${marks.map((m, i) => `README.md:${m.line} ${((marks[i + 1]?.at ?? t0 + (Date.now() - t0)) - m.at) / 1000}s`).join(', ')}`);
    const failedAt = [...r.out.matchAll(/::(README\.md:\d+)::/g)].at(-1)?.[1];
    expect(r.code, `the quick start failed in the block at ${failedAt}:\n${r.out}\n--- server ---\n${srv.output().slice(-4000)}`).to.equal(0);

    const cr = JSON.parse(await readFile(path.join(root, 'final.json'), 'utf8'));
    expect(cr).to.include({ number: 1, status: 'merged', title: 'Add a greetings section' });
    expect(cr.origin_session_id).to.be.a('string');
    expect(cr.merge_commit_sha).to.match(/^[0-9a-f]{40}$/);
    // The agent's turns went through the gateway with the upstream key, never a sandbox's.
    expect(model.agentTurns().length).to.be.at.least(4);
    for (const req of model.requests) expect(req.headers.authorization).to.equal(`Bearer ${K}`);
  });
});
