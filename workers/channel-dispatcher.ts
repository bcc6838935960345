import { createChannelDispatch, type ChannelDispatcherOptions } from '../services/channels/dispatcher.js';
import { supervise, type RunningJob, type WorkerMetrics } from './supervisor.js';

/**
 * Chat notifications (services/channels/dispatcher.ts): one process delivers at a time, the
 * holder of an advisory lock on a connection of its own (its retries and checkpoints are its
 * state); the others stand by and take over when it dies. The lock's name is the one every
 * earlier version took, so a rolling upgrade never has two deliverers.
 */
export const CHANNELS_LEADER_KEY = 'svc-channels-dispatcher';

export function startChannelDispatcher(opts: ChannelDispatcherOptions & { pollMs?: number; metrics?: WorkerMetrics }): RunningJob {
  const dispatch = createChannelDispatch(opts);
  return supervise(
    {
      name: 'channel-dispatcher',
      // A pass with nothing new and no retry due is one cheap read; a quarter second keeps a
      // retry within that of its backoff (500 ms, doubling), so the backoff sets the gaps.
      everyMs: opts.pollMs ?? 250,
      leader: { key: CHANNELS_LEADER_KEY, mode: 'held' },
      pass: dispatch.pass,
      stopping: dispatch.stop,
    },
    { db: opts.db, logger: opts.logger, metrics: opts.metrics },
  );
}
