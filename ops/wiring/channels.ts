import { startChannelDispatcher } from '../../workers/channel-dispatcher.js';
import { outboundPolicy } from '../../infra/net/outbound-policy.js';
import type { Core, Running } from './core.js';

/** Chat channels: the notifications subscriber runs with the workers (SVC_CHANNELS_DISPATCH). */
export function wireChannels(core: Core): Running {
  const { config, logger, db, secrets, roles } = core;
  if (!roles.worker || !config.SVC_CHANNELS_DISPATCH) return {};
  const channels = startChannelDispatcher({
    db,
    secrets,
    logger,
    policy: outboundPolicy(config),
    allowHttp: config.SVC_CHANNELS_ALLOW_HTTP,
    metrics: core.workerMetrics,
    ...(config.SVC_PUBLIC_URL ? { publicUrl: config.SVC_PUBLIC_URL } : {}),
  });
  return { stop: () => channels.stop() };
}
