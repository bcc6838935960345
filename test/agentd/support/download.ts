import http from 'node:http';

/**
 * GETs `path` and counts its body as it streams: bytes received, the peak of Buffer
 * memory above what it was at the start, and the response headers. `onFirstByte` runs
 * when the first body bytes arrive.
 */
export function measuredDownload(
  port: number,
  path: string,
  headers: Record<string, string> = {},
  onFirstByte?: () => void,
): Promise<{ received: number; peak: number; headers: http.IncomingHttpHeaders }> {
  const baseline = process.memoryUsage().arrayBuffers;
  let received = 0;
  let peak = 0;
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path, headers }, (res) => {
        res.on('data', (c: Buffer) => {
          if (received === 0) onFirstByte?.();
          received += c.length;
          peak = Math.max(peak, process.memoryUsage().arrayBuffers - baseline);
        });
        res.on('end', () => resolve({ received, peak, headers: res.headers }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}
