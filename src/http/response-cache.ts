// Finished JSON pages, kept by their entity tag. The tag is made of the snapshot id, the organization, the
// compiled SQL with its parameters, the fields and the links' base (http/etag.ts), so an entry can never be
// stale: a new snapshot makes new tags, and the old entries age out. Bounded by bytes, least recently used
// first out. Scripts and the page repeat the same queries all day; a hit costs no worker slot at all.

export interface CachedPage {
  body: Buffer;
  rows: number;
}

export class ResponseCache {
  private readonly entries = new Map<string, CachedPage>();
  private held = 0;
  hits = 0;
  misses = 0;

  /** `maxBytes` 0 turns the cache off. A page larger than an eighth of it is not kept. */
  constructor(readonly maxBytes: number) {}

  get(tag: string): CachedPage | undefined {
    const page = this.entries.get(tag);
    if (!page) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    this.entries.delete(tag); // re-inserted: Map order is the recency order
    this.entries.set(tag, page);
    return page;
  }

  set(tag: string, page: CachedPage): void {
    if (page.body.length > this.maxBytes / 8 || this.entries.has(tag)) return;
    this.entries.set(tag, page);
    this.held += page.body.length;
    for (const [oldest, evicted] of this.entries) {
      if (this.held <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.held -= evicted.body.length;
    }
  }

  get bytes(): number {
    return this.held;
  }

  get size(): number {
    return this.entries.size;
  }
}
