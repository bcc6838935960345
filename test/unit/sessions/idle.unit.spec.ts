import { expect } from 'chai';
import { loadConfig } from '../../../infra/config.js';
import { activityIntervalMs, MIN_PROJECT_IDLE_MS } from '../../../services/sessions/deps.js';
import { parseManifest } from '../../../domain/manifest/parse.js';

describe('session activity and the shortest idle time a project may set', () => {
  it('a project may set 4 minutes and no less', () => {
    expect(parseManifest('[sandbox]\nidle_timeout_minutes = 4\n').manifest?.sandbox.idle_timeout_minutes).to.equal(4);
    expect(parseManifest('[sandbox]\nidle_timeout_minutes = 3\n').manifest).to.equal(null);
    expect(MIN_PROJECT_IDLE_MS).to.equal(4 * 60_000);
  });

  it('activity is recorded at least 4 times within the shortest idle time, and at most once a minute', () => {
    expect(activityIntervalMs(loadConfig({ SVC_SESSION_IDLE_MINUTES: '15' }))).to.equal(60_000);
    expect(activityIntervalMs(loadConfig({ SVC_SESSION_IDLE_MINUTES: '2' }))).to.equal(30_000);
    expect(activityIntervalMs(loadConfig({ SVC_SESSION_IDLE_MINUTES: '0.05' }))).to.equal(750);
  });
});
