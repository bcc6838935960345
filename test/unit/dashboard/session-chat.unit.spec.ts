import { expect } from 'chai';
import { chatState, sessionCrs, usageFacts } from '../../../api/dashboard/session-chat.js';

describe('session page: chat state, the session CRs, usage', () => {
  const at = '2026-11-25T10:00:00.000Z';
  it('says "starting" until the agent is ready, why it failed, or that it stopped', () => {
    expect(String(chatState({ status: 'provisioning', agent_state: 'starting', error: null }))).to.contain('data-agent-state="starting"').and.contain('The agent is starting…');
    expect(String(chatState({ status: 'running', agent_state: 'starting', error: null }))).to.contain('The agent is starting…');
    const ready = String(chatState({ status: 'running', agent_state: 'ready', error: null }));
    expect(ready).to.contain('data-agent-state="ready"').and.not.contain('<p');
    expect(String(chatState({ status: 'running', agent_state: 'error', error: { code: 'agent_failed', message: 'no <runtime>', at } })))
      .to.contain('The agent failed to start: no &lt;runtime&gt;').and.contain('notice error');
    expect(String(chatState({ status: 'failed', agent_state: 'starting', error: null }))).to.contain('data-agent-state="stopped"').and.contain('The agent is stopped.');
  });

  it('lists the CRs with their status, titles escaped', () => {
    const out = String(sessionCrs('/projects/p1', [{ number: 3, title: '<script>x</script>', status: 'merged' } as never]));
    expect(out).to.contain('href="/projects/p1/change-requests/3"').and.contain('#3 &lt;script&gt;x&lt;/script&gt;').and.contain('data-status="merged"');
    expect(String(sessionCrs('/projects/p1', []))).to.contain('None yet.');
  });

  it('shows token totals per model, or none yet', () => {
    expect(String(usageFacts(undefined))).to.contain('none used yet');
    const spent = { input_tokens: 4200, output_tokens: 130, requests: 4, money: [{ currency: 'USD', amount: 0.5 }], unpriced_tokens: 30 };
    const out = String(
      usageFacts({
        ...spent,
        by_model: [{ model: 'a<b', ...spent, priced: false }],
        sandbox_seconds: 125,
        cpu_seconds: null,
        unmetered: false,
        by_change_request: [{ cr_id: null, number: null, ...spent, sandbox_seconds: 125 }],
      }),
    );
    expect(out).to.contain('4,200 input · 130 output').and.contain('4 model calls: a&lt;b 4,200 / 130').and.contain('data-unpriced="a&lt;b"');
    expect(out).to.contain('USD 0.50').and.contain('+ 30 unpriced tokens').and.contain('2 min 5 s').and.contain('unattributed: 4,330 tokens');
    expect(out).to.not.contain('data-unmetered');
  });
});
