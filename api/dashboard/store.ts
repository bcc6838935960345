import { loadSecretKey } from '../../infra/secret-box.js';
import { cookieKey, sessionStore, type SessionStore } from '../../services/dashboard/sessions.js';
import type { ApiDeps } from '../deps.js';

const stores = new WeakMap<ApiDeps['db'], Promise<SessionStore>>();

/** One session store per database, its cookie key derived from the server's secret key. */
export function sessionStoreOf(deps: ApiDeps): () => Promise<SessionStore> {
  return () => {
    let s = stores.get(deps.db);
    if (!s) {
      s = loadSecretKey({ envKey: deps.config.SVC_SECRET_KEY, dataDir: deps.config.dataDir }).then((key) => sessionStore(deps.db, cookieKey(key), deps.secrets));
      stores.set(deps.db, s);
    }
    return s;
  };
}
