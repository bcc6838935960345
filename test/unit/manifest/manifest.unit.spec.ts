import { expect } from 'chai';
import { appHash, parseManifest } from '../../../domain/manifest/parse.js';
import { setTriggerEnabled } from '../../../domain/manifest/edit.js';

const VALID = `# project manifest
[agent]
config_dir = ".svc/agent"

[env]
required = ["OPENAI_API_KEY"]
optional = { SENTRY_DSN = "error reporting" }

[sandbox]
memory_mb = 2048

[[triggers]]
slug = "nightly"
schedule = "0 3 * * *"
prompt = "Run the nightly cleanup"
enabled = true  # keep on

[[apps]]
name = "web"
command = "node server.js"
port = 3000
health_path = "/healthz"
env = { MODE = "prod" }
`;

describe('manifest parsing (svc.toml)', () => {
  const cases: Array<{ name: string; text: string; valid: boolean; errors?: RegExp; warnings?: RegExp[] }> = [
    { name: 'a full valid manifest', text: VALID, valid: true },
    { name: 'an empty file (defaults)', text: '', valid: true },
    { name: 'invalid TOML', text: '[agent\nconfig_dir = 1', valid: false, errors: /invalid TOML/ },
    { name: 'a duplicate key (TOML error)', text: '[agent]\nconfig_dir = "a"\nconfig_dir = "b"\n', valid: false, errors: /invalid TOML/ },
    { name: 'wrong type: port as a string', text: '[[apps]]\nname = "web"\ncommand = "x"\nport = "3000"\n', valid: false, errors: /apps\.0\.port/ },
    { name: 'wrong type: enabled as a string', text: '[[triggers]]\nslug = "a"\nschedule = "* * * * *"\nprompt = "p"\nenabled = "yes"\n', valid: false, errors: /triggers\.0\.enabled/ },
    { name: 'a 6-field schedule', text: '[[triggers]]\nslug = "a"\nschedule = "* * * * * *"\nprompt = "p"\n', valid: false, errors: /5 fields/ },
    { name: 'an out-of-range minute', text: '[[triggers]]\nslug = "a"\nschedule = "61 * * * *"\nprompt = "p"\n', valid: false, errors: /outside 0-59/ },
    { name: 'a bad slug', text: '[[triggers]]\nslug = "Bad Slug"\nschedule = "* * * * *"\nprompt = "p"\n', valid: false, errors: /triggers\.0\.slug/ },
    { name: 'duplicate trigger slugs', text: '[[triggers]]\nslug = "a"\nschedule = "* * * * *"\nprompt = "p"\n[[triggers]]\nslug = "a"\nschedule = "* * * * *"\nprompt = "q"\n', valid: false, errors: /duplicate trigger slug/ },
    { name: 'a bad env name', text: '[env]\nrequired = ["lower"]\n', valid: false, errors: /env\.required/ },
    { name: 'an absolute config_dir', text: '[agent]\nconfig_dir = "/etc"\n', valid: false, errors: /agent\.config_dir/ },
    { name: 'unknown keys: warnings only', text: 'colour = "blue"\n[agent]\nflavour = 1\n[[triggers]]\nslug = "a"\nschedule = "* * * * *"\nprompt = "p"\nextra = true\n', valid: true, warnings: [/^colour$/, /^agent\.flavour$/, /^triggers\.0\.extra$/] },
    { name: '[sandbox]: every key', text: '[sandbox]\nimage = "ghcr.io/acme/dev:1"\ncpus = 0.5\nmemory_mb = 512\nidle_timeout_minutes = 4\n', valid: true },
    { name: '[sandbox] dockerfile: a relative path', text: '[sandbox]\ndockerfile = "docker/dev.Dockerfile"\n', valid: true },
    { name: '[sandbox] dockerfile: absolute', text: '[sandbox]\ndockerfile = "/etc/passwd"\n', valid: false, errors: /sandbox\.dockerfile: a relative path inside the repository/ },
    { name: '[sandbox] dockerfile: leaves the repo', text: '[sandbox]\ndockerfile = "docker/../../x"\n', valid: false, errors: /sandbox\.dockerfile/ },
    { name: '[sandbox] dockerfile: an option', text: '[sandbox]\ndockerfile = "--output=x"\n', valid: false, errors: /sandbox\.dockerfile/ },
    { name: '[sandbox] image: not an image reference', text: '[sandbox]\nimage = "--privileged x"\n', valid: false, errors: /sandbox\.image: an image reference/ },
    { name: '[sandbox] cpus: zero', text: '[sandbox]\ncpus = 0\n', valid: false, errors: /sandbox\.cpus/ },
    { name: '[sandbox] cpus: more than 64', text: '[sandbox]\ncpus = 65\n', valid: false, errors: /sandbox\.cpus/ },
    { name: '[sandbox] memory_mb: under 64', text: '[sandbox]\nmemory_mb = 32\n', valid: false, errors: /sandbox\.memory_mb/ },
    { name: '[sandbox] memory_mb: a fraction', text: '[sandbox]\nmemory_mb = 100.5\n', valid: false, errors: /sandbox\.memory_mb/ },
    { name: '[sandbox] idle_timeout_minutes: zero', text: '[sandbox]\nidle_timeout_minutes = 0\n', valid: false, errors: /sandbox\.idle_timeout_minutes/ },
    { name: '[sandbox] image and dockerfile: the image wins, a warning says so', text: '[sandbox]\nimage = "a:1"\ndockerfile = ".svc/Dockerfile"\n', valid: true, warnings: [/^sandbox\.dockerfile$/] },
    { name: 'an app name too long for one DNS label with the project id: a warning (a hashed label); public is a known key', text: `[[apps]]\nname = "${'a'.repeat(51)}"\ncommand = "x"\nport = 1\npublic = true\n`, valid: true, warnings: [/^apps\.0\.name$/] },
    { name: 'SVC_ names in [env]: warnings', text: '[env]\nrequired = ["SVC_TOKEN"]\noptional = { SVC_X = "x" }\n', valid: true, warnings: [/^env\.required\.SVC_TOKEN$/, /^env\.optional\.SVC_X$/] },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const r = parseManifest(c.text);
      expect(r.manifest !== null, JSON.stringify(r.errors)).to.equal(c.valid);
      if (c.errors) expect(r.errors.map((e) => `${e.path}: ${e.message}`).join('\n')).to.match(c.errors);
      if (c.valid) expect(r.errors).to.deep.equal([]);
      for (const w of c.warnings ?? []) expect(r.warnings.map((x) => x.path).some((p) => w.test(p)), JSON.stringify(r.warnings)).to.equal(true);
    });
  }

  it('normalises [env] and fills defaults', () => {
    const m = parseManifest(VALID).manifest!;
    expect(m.env.required).to.deep.equal([{ name: 'OPENAI_API_KEY', description: '' }]);
    expect(m.env.optional).to.deep.equal([{ name: 'SENTRY_DSN', description: 'error reporting' }]);
    expect(m.triggers[0]).to.include({ slug: 'nightly', enabled: true });
    expect(parseManifest('').manifest!.agent.config_dir).to.equal('.svc/agent');
  });

  it('hashes an app entry by content, not by key order', () => {
    const a = { name: 'web', command: 'x', port: 1, env: { A: '1', B: '2' } };
    const b = { port: 1, env: { B: '2', A: '1' }, command: 'x', name: 'web' };
    expect(appHash(a)).to.equal(appHash(b));
    expect(appHash(a)).to.not.equal(appHash({ ...a, port: 2 }));
  });
});

describe('setting a trigger enabled in svc.toml', () => {
  const lines = (s: string) => s.split('\n');
  const changed = (a: string, b: string) => {
    const x = lines(a);
    const y = lines(b);
    return y.filter((l, i) => x[i] !== l);
  };

  it('rewrites exactly the enabled line, keeping its comment and everything else', () => {
    const r = setTriggerEnabled(VALID, 'nightly', false);
    expect(r.ok && r.changed).to.equal(true);
    if (!r.ok) return;
    expect(lines(r.text)).to.have.length(lines(VALID).length);
    expect(changed(VALID, r.text)).to.deep.equal(['enabled = false  # keep on']);
  });

  it('adds one line after the slug when the entry has no enabled key', () => {
    const text = '[[triggers]]\n  slug = "a"   # first\n  schedule = "* * * * *"\n  prompt = "p"\n\n[[triggers]]\nslug = "b"\nschedule = "* * * * *"\nprompt = "q"\n';
    const r = setTriggerEnabled(text, 'b', false);
    expect(r.ok).to.equal(true);
    if (!r.ok) return;
    expect(lines(r.text)).to.have.length(lines(text).length + 1);
    expect(lines(r.text)[7]).to.equal('enabled = false');
    expect(parseManifest(r.text).manifest!.triggers.map((t) => t.enabled)).to.deep.equal([true, false]);
  });

  it('reports no change when already in that state, and refuses unknown slugs and layouts it cannot follow', () => {
    expect(setTriggerEnabled(VALID, 'nightly', true)).to.deep.include({ ok: true, changed: false });
    expect(setTriggerEnabled(VALID, 'nope', false).ok).to.equal(false);
    const inline = 'triggers = [{ slug = "a", schedule = "* * * * *", prompt = "p", enabled = true }]\n';
    expect(setTriggerEnabled(inline, 'a', false).ok).to.equal(false);
  });
});
