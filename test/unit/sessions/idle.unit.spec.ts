import { expect } from 'chai';
import { loadConfig } from '../../../infra/config.js';
import { activityIntervalMs, MIN_PROJECT_IDLE_MS } from '../../../infra/sessions/deps.js';
import { parseManifest } from '../../../domain/manifest/parse.js';

describe('session activity and the shortest idle time a project may set', () => {
  it('a project may set 1 minute and no less', () => {
    expect(parseManifest('[sandbox]\nidle_timeout_minutes = 1\n').manifest?.sandbox.idle_timeout_minutes).to.equal(1);
    expect(parseManifest('[sandbox]\nidle_timeout_minutes = 0\n').manifest).to.equal(null);
    expect(MIN_PROJECT_IDLE_MS).to.equal(60_000);
  });

  it('activity is recorded at least 4 times within the shortest idle time: the server default (15 min) no longer sets it to 60 s', () => {
    expect(activityIntervalMs(loadConfig({ SVC_SESSION_IDLE_MINUTES: '15' }))).to.equal(15_000);
    expect(activityIntervalMs(loadConfig({ SVC_SESSION_IDLE_MINUTES: '0.05' }))).to.equal(750);
  });
});
