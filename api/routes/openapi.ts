import { Router } from 'express';
import { buildOpenApi } from '../openapi.js';

export function openapiRoutes(): Router {
  const r = Router();
  let doc: object | undefined; // built on first request: nothing at start-up
  r.get('/v1/openapi.json', (_req, res) => {
    doc ??= buildOpenApi();
    res.json(doc);
  });
  return r;
}
