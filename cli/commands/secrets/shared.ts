/** Shapes of the secrets API as the CLI reads them (contracts.md "Secrets, manifest, triggers, apps"). */
export type { SecretsListing } from '../../../contracts/manifest.js';

export const secretsPath = (project: string) => `/projects/${encodeURIComponent(project)}/secrets`;

const NAME = /^[A-Z_][A-Z0-9_]*$/;
export const validSecretName = (n: string) => NAME.test(n) && !n.startsWith('SVC_');

/** Reads all of stdin (for `NAME=-`); one trailing newline is dropped, as `echo x |` adds it. */
export async function readStdin(input: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of input) chunks.push(typeof c === 'string' ? Buffer.from(c) : (c as Buffer));
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}
