/** The key and team a bearer token authenticated as. */
export interface Identity {
  keyId: string;
  teamId: string;
}

/**
 * Bearer tokens (by hash) that recently authenticated, with their key and team: for them the
 * pre- and post-authentication buckets are checked in one round trip before authentication
 * (which still runs on every request). Only a successful authentication adds an entry, so a
 * client cannot plant one; a failed one removes it. Bounded: the oldest entry goes first.
 */
export class IdentityCache {
  private readonly entries = new Map<string, Identity>();

  constructor(private readonly max = 10_000) {}

  get(tokenHash: string): Identity | undefined {
    return this.entries.get(tokenHash);
  }

  set(tokenHash: string, identity: Identity): void {
    const known = this.entries.get(tokenHash);
    if (known && known.keyId === identity.keyId && known.teamId === identity.teamId) return;
    this.entries.delete(tokenHash);
    this.entries.set(tokenHash, identity);
    if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!);
  }

  delete(tokenHash: string): void {
    this.entries.delete(tokenHash);
  }

  get size(): number {
    return this.entries.size;
  }
}
