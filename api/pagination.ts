import type { Request, Response } from 'express';

/**
 * `Link: <url>; rel="next"` as GitHub sends it: the same URL with `cursor` set to the next
 * page's. Relative to the request's own host (a proxy that rewrites hosts rewrites this too).
 */
export function setNextLink(req: Request, res: Response, nextCursor: string | null): void {
  if (!nextCursor) return;
  const url = new URL(req.originalUrl, `${req.protocol}://${req.get('host') ?? 'localhost'}`);
  url.searchParams.delete('access_token');
  url.searchParams.set('cursor', nextCursor);
  res.set('Link', `<${url.toString()}>; rel="next"`);
}
