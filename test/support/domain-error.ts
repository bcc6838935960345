import { DomainError } from '../../domain/errors.js';

/** The DomainError `p` rejects with; anything else (or success) fails the test. */
export async function domainError(p: Promise<unknown>): Promise<DomainError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof DomainError) return e;
    throw e;
  }
  throw new Error('expected a DomainError, got success');
}
