import { expect } from 'chai';
import { decide, evolve, fold, type SessionCommand, type SessionEvent, type SessionState } from '../../../domain/session/index.js';
import { loadConfig } from '../../../infra/config.js';
import { runtimeConfigContent } from '../../../agentd/runtime-config.js';
import { UsageTap } from '../../../services/llm/usage-tap.js';
import { upstreamBody, upstreamHeaders } from '../../../services/llm/gateway.js';
import { gitIdentityName, publicHost } from '../../../services/sessions/agent-env.js';
import { redactLog, tailOf } from '../../../services/sessions/failure-log.js';
import { chooseModel, gatewayModels, modelProblem } from '../../../services/sessions/model-choice.js';
import { actor, at, meta, specFor } from '../../support/decider.js';

const given = specFor<SessionState, SessionEvent, SessionCommand>({ decide, evolve, initial: null });
const sid = '00000000-0000-4000-8000-000000000001';
const sb1 = '00000000-0000-4000-8000-0000000000b1';
const sb2 = '00000000-0000-4000-8000-0000000000b2';
const t0 = '2026-01-01T00:00:00.000Z';
const created: SessionEvent = {
  type: 'SessionCreated',
  data: { session_id: sid, account_id: sid, project_id: sid, base_ref: 'main', agent: 'build', model: null, prompt: null, trigger: null, created_by: actor, created_at: t0 },
};
const upTo = (sb: string): SessionEvent[] => [
  { type: 'SandboxRequested', data: { sandbox_id: sb, provider: 'process', at: t0 } },
  { type: 'SandboxActive', data: { sandbox_id: sb, url: 'http://127.0.0.1:1', ref: '1', at: t0 } },
  { type: 'SessionRunning', data: { sandbox_id: sb, at: t0 } },
];
const running = [created, { type: 'SessionBranchCut', data: { base_commit_sha: 'a'.repeat(40), at: t0 } } as SessionEvent, ...upTo(sb1)];
const ready: SessionEvent = { type: 'SessionAgentReady', data: { sandbox_id: sb1, at: t0 } };
const stateOf = (events: SessionEvent[]) => fold(events)!.agent_state;

describe('agent_state (the runtime behind a running session)', () => {
  it('starting while provisioning and running, ready once the runtime answers, stopped, error, starting again on restart', () => {
    expect(stateOf([created])).to.equal('starting');
    expect(stateOf(running)).to.equal('starting');
    expect(stateOf([...running, ready])).to.equal('ready');
    expect(stateOf([...running, ready, { type: 'SessionStopped', data: { reason: 'user', by: actor, at: t0 } }])).to.equal('stopped');
    expect(stateOf([created, { type: 'SessionFailed', data: { error: { code: 'timeout', message: 'x', at: t0 }, at: t0 } }])).to.equal('error');
    expect(stateOf([...running, ready, { type: 'SandboxArchived', data: { sandbox_id: sb1, at: t0 } }, { type: 'SessionRestarted', data: { by: actor, at: t0 } }])).to.equal('starting');
  });

  it('ready and failed are recorded once, for the current active sandbox of a running session only', () => {
    given(running).when({ type: 'MarkAgentReady', data: { sandbox_id: sb1 }, meta }).then([{ type: 'SessionAgentReady', data: { sandbox_id: sb1, at } }]);
    given([...running, ready]).when({ type: 'MarkAgentReady', data: { sandbox_id: sb1 }, meta }).then([]);
    given(running).when({ type: 'MarkAgentReady', data: { sandbox_id: sb2 }, meta }).then([]);
    given([created]).when({ type: 'MarkAgentReady', data: { sandbox_id: sb1 }, meta }).then([]);
    const error = { code: 'agent_timeout', message: 'never answered' };
    given(running).when({ type: 'FailAgent', data: { sandbox_id: sb1, error }, meta }).then([{ type: 'SessionAgentFailed', data: { sandbox_id: sb1, error: { ...error, at }, at } }]);
    given([...running, ready]).when({ type: 'FailAgent', data: { sandbox_id: sb1, error }, meta }).then([]);
    const failed = fold([...running, { type: 'SessionAgentFailed', data: { sandbox_id: sb1, error: { ...error, at: t0 }, at: t0 } }])!;
    expect(failed).to.include({ status: 'running', agent_state: 'error' });
    expect(failed.error).to.deep.equal({ ...error, at: t0 });
  });
});

describe('model choice', () => {
  const cfg = (env: Record<string, string> = {}) => loadConfig({ SVC_DATA_DIR: '/tmp/x', ...env });
  const gw = cfg({ SVC_LLM_UPSTREAM_URL: 'http://127.0.0.1:9/v1', SVC_LLM_MODEL: 'm1', SVC_LLM_MODELS: 'm2, org/m3' });

  it('session > manifest > server; a name the gateway offers goes through it, other provider/model names to the runtime', () => {
    expect(gatewayModels(gw)).to.deep.equal(['m1', 'm2', 'org/m3']);
    expect(chooseModel(gw, null, undefined)).to.deep.equal({ model: 'm1', via: 'gateway', source: 'server', runtimeModel: 'svc/m1' });
    expect(chooseModel(gw, null, 'm2')).to.include({ model: 'm2', source: 'manifest', runtimeModel: 'svc/m2' });
    expect(chooseModel(gw, 'org/m3', 'm2')).to.include({ model: 'org/m3', via: 'gateway', source: 'session', runtimeModel: 'svc/org/m3' });
    expect(chooseModel(gw, 'anthropic/claude-x', 'm2')).to.include({ via: 'provider', runtimeModel: 'anthropic/claude-x' });
    expect(chooseModel(cfg(), null, undefined)).to.deep.equal({ model: null, via: null, source: null, runtimeModel: null });
    expect(() => cfg({ SVC_LLM_UPSTREAM_URL: 'file:///etc/passwd' })).to.throw(/SVC_LLM_UPSTREAM_URL: must be an http/);
  });

  it('says what to configure, and where, when no model can answer', () => {
    const none = modelProblem(cfg(), chooseModel(cfg(), null, undefined), []);
    expect(none).to.match(/SVC_LLM_UPSTREAM_URL/).and.match(/docs\/models\.md/);
    expect(modelProblem(cfg(), chooseModel(cfg(), 'bare', undefined), [])).to.match(/gateway, which has no upstream/);
    expect(modelProblem(cfg(), chooseModel(cfg(), 'anthropic/claude-x', undefined), [])).to.match(/ANTHROPIC_API_KEY/);
    expect(modelProblem(cfg(), chooseModel(cfg(), 'anthropic/claude-x', undefined), ['ANTHROPIC_API_KEY'])).to.equal(null);
    expect(modelProblem(cfg(), chooseModel(cfg(), 'acme-ai/x', undefined), ['ACME_AI_API_KEY'])).to.equal(null);
    expect(modelProblem(gw, chooseModel(gw, null, undefined), [])).to.equal(null);
  });
});

describe('the gateway, piece by piece', () => {
  it('reads the usage chunk of a stream split anywhere, and a JSON body', () => {
    const sse =
      'data: {"choices":[{"delta":{"content":"usage is a word"}}]}\n\n' +
      'data: {"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}\n\ndata: [DONE]\n\n';
    for (const cut of [1, 7, 40, 75, sse.length - 3]) {
      const tap = new UsageTap();
      tap.feed(Buffer.from(sse.slice(0, cut)));
      tap.feed(Buffer.from(sse.slice(cut)));
      expect(tap.end(), String(cut)).to.deep.equal({ input_tokens: 12, output_tokens: 5 });
    }
    expect(new UsageTap().end()).to.equal(null);
    expect(UsageTap.ofJson('{"usage":{"prompt_tokens":3,"completion_tokens":-1}}')).to.deep.equal({ input_tokens: 3, output_tokens: 0 });
    expect(UsageTap.ofJson('not json')).to.equal(null);
  });

  it('sends upstream only its own key and a usage request; nothing of the caller', () => {
    const config = loadConfig({ SVC_DATA_DIR: '/tmp/x', SVC_LLM_UPSTREAM_KEY: 'K' });
    expect(upstreamHeaders(config, 'text/event-stream')).to.deep.equal({ 'content-type': 'application/json', accept: 'text/event-stream', authorization: 'Bearer K' });
    expect(upstreamHeaders(config, 'x\r\ninjected: 1')).to.include({ accept: 'application/json' });
    expect(JSON.parse(upstreamBody({ model: 'm', stream: true, stream_options: { foo: 1 } }))).to.deep.equal({ model: 'm', stream: true, stream_options: { foo: 1, include_usage: true } });
    expect(JSON.parse(upstreamBody({ model: 'm' }))).to.deep.equal({ model: 'm' });
  });

  it("gives the runtime a provider for the gateway in its config content, with the sandbox's key", () => {
    const c = JSON.parse(runtimeConfigContent({ baseUrl: 'http://s/v1/llm', apiKey: 'svc_llm_k', models: ['m1'], agentModel: 'svc/m2' })!);
    expect(c.provider.svc).to.deep.include({ npm: '@ai-sdk/openai-compatible', options: { baseURL: 'http://s/v1/llm', apiKey: 'svc_llm_k' } });
    expect(Object.keys(c.provider.svc.models)).to.deep.equal(['m1', 'm2']);
    expect(c).to.include({ model: 'svc/m2', small_model: 'svc/m2' });
    expect(JSON.parse(runtimeConfigContent({ baseUrl: undefined, apiKey: undefined, models: [], agentModel: 'anthropic/x' })!)).to.deep.equal({ model: 'anthropic/x' });
    expect(runtimeConfigContent({ baseUrl: undefined, apiKey: undefined, models: [], agentModel: undefined })).to.equal(undefined);
  });
});

describe('git identity and failure logs', () => {
  it('names the agent for its user, at the public host; nothing git would refuse', () => {
    expect(gitIdentityName('Ada Lovelace')).to.equal('Ada Lovelace (svc agent)');
    expect(gitIdentityName('Eve <eve@x>\n')).to.equal('Eve eve@x (svc agent)');
    expect(gitIdentityName('  ')).to.equal('svc (svc agent)');
    expect(publicHost('https://svc.example.com:8443/', 'http://127.0.0.1:1/v1')).to.equal('svc.example.com');
    expect(publicHost(undefined, 'http://[::1]:8080/v1')).to.equal('::1');
    expect(publicHost(undefined, 'nonsense')).to.equal('localhost');
  });

  it('redacts known secret values and token shapes, and keeps the tail from a line start', () => {
    const log = 'boot\nkey=supersecretvalue and svc_pat_abcdefghijklmnop\nsvc_llm_zzzzzzzzzzzz ok\nshort=abc\n';
    const out = redactLog(log, ['supersecretvalue', 'abc']);
    expect(out).to.not.include('supersecretvalue').and.not.include('svc_pat_abc').and.not.include('svc_llm_zzz');
    expect(out).to.include('short=abc').and.include('[redacted]');
    const long = Array.from({ length: 100 }, (_, i) => `line ${i}`).join('\n');
    const tail = tailOf(long, 50);
    expect(tail.length).to.be.at.most(50);
    expect(tail.startsWith('line ')).to.equal(true);
    expect(tail.endsWith('line 99')).to.equal(true);
  });
});
