/**
 * The small part of nodegit's API the libgit2 engine uses, typed locally (no
 * @types/nodegit). Only what engine-libgit2.ts calls is declared.
 */
export interface NgOid {
  tostrS(): string;
}
export interface NgTree {
  id(): NgOid;
}
export interface NgCommit {
  id(): NgOid;
  getTree(): Promise<NgTree>;
}
export interface NgIndexEntry {
  path: string;
}
export interface NgIndex {
  hasConflicts(): number | boolean;
  entries(): NgIndexEntry[];
  writeTreeTo(repo: NgRepository): Promise<NgOid>;
}
export interface NgDiffFile {
  path(): string;
  flags(): number;
}
export interface NgPatch {
  oldFile(): NgDiffFile;
  newFile(): NgDiffFile;
  status(): number;
  lineStats(): { total_additions: number; total_deletions: number };
}
export interface NgDiff {
  patches(): Promise<NgPatch[]>;
  toBuf(format: number): Promise<string>;
}
export interface NgReference {
  peel(type: number): Promise<{ id(): NgOid }>;
}
export interface NgSignature {
  readonly __signature: unique symbol;
}
export interface NgRepository {
  getCommit(id: NgOid | string): Promise<NgCommit>;
  createCommit(
    updateRef: string | null,
    author: NgSignature,
    committer: NgSignature,
    message: string,
    tree: NgOid,
    parents: NgCommit[],
  ): Promise<NgOid>;
  free?(): void;
}

export interface NodeGit {
  Repository: { open(path: string): Promise<NgRepository> };
  Oid: { fromString(sha: string): NgOid };
  Merge: {
    base(repo: NgRepository, a: NgOid, b: NgOid): Promise<NgOid>;
    commits(repo: NgRepository, ours: NgCommit, theirs: NgCommit, options?: unknown): Promise<NgIndex>;
  };
  Graph: { descendantOf(repo: NgRepository, commit: NgOid, ancestor: NgOid): Promise<number> };
  Index: { entryStage(entry: NgIndexEntry): number };
  Diff: {
    treeToTree(repo: NgRepository, oldTree: NgTree | null, newTree: NgTree, opts?: unknown): Promise<NgDiff>;
    FLAG: { BINARY: number };
    FORMAT: { PATCH: number };
    DELTA: Record<'ADDED' | 'DELETED' | 'MODIFIED' | 'TYPECHANGE', number>;
  };
  Reference: {
    lookup(repo: NgRepository, name: string): Promise<NgReference>;
    create(repo: NgRepository, name: string, id: NgOid, force: number, logMessage: string): Promise<NgReference>;
    createMatching(
      repo: NgRepository,
      name: string,
      id: NgOid,
      force: number,
      currentId: NgOid,
      logMessage: string,
    ): Promise<NgReference>;
  };
  Signature: { create(name: string, email: string, time: number, offsetMinutes: number): NgSignature };
  Object: { TYPE: { COMMIT: number } };
  Error: { CODE: { ENOTFOUND: number; EEXISTS: number; EMODIFIED: number } };
}

/** A libgit2 failure carries its error class in `errno`; messages are not inspected. */
export const ngErrno = (e: unknown): number | undefined =>
  typeof e === 'object' && e !== null && typeof (e as { errno?: unknown }).errno === 'number'
    ? (e as { errno: number }).errno
    : undefined;
