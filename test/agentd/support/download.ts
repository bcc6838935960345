import http from 'node:http';
import v8 from 'node:v8';
import vm from 'node:vm';

v8.setFlagsFromString('--expose-gc');
/** V8's collector, reachable without starting node with --expose-gc. */
const collect = vm.runInNewContext('gc') as () => void;
/** How often (in bytes received) the live Buffer memory is sampled. */
const SAMPLE_EVERY = 4 * 1024 * 1024;

/**
 * GETs `path` and counts its body as it streams: bytes received, the peak of live Buffer
 * memory above what it was at the start, and the response headers. The peak is sampled
 * after a full collection every few MB, so garbage (chunks already delivered) never
 * counts: only buffers something still holds, which is what a proxy that does not
 * stream would grow. `onFirstByte` runs when the first body bytes arrive.
 */
export function measuredDownload(
  port: number,
  path: string,
  headers: Record<string, string> = {},
  onFirstByte?: () => void,
): Promise<{ received: number; peak: number; headers: http.IncomingHttpHeaders }> {
  collect();
  const baseline = process.memoryUsage().arrayBuffers;
  let received = 0;
  let nextSample = SAMPLE_EVERY;
  let peak = 0;
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path, headers }, (res) => {
        res.on('data', (c: Buffer) => {
          if (received === 0) onFirstByte?.();
          received += c.length;
          if (received < nextSample) return;
          nextSample += SAMPLE_EVERY;
          collect();
          peak = Math.max(peak, process.memoryUsage().arrayBuffers - baseline);
        });
        res.on('end', () => resolve({ received, peak, headers: res.headers }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}
