// DuckDB allocates its buffers with the jemalloc it bundles, which keeps freed pages for reuse before it
// returns them to the system; DuckDB sets the decay to about a second. jemalloc reads its configuration once,
// at its first allocation: what is set here must run before DuckDB is first used in the process. A
// DUCKDB_JE_MALLOC_CONF set by the caller is kept as it is.

// A load churns through its memory limit many times over (staged tables, sorts, the view being written, its
// Parquet copy), so what the process holds is its limit plus what it freed in the last second: at a 300MB
// limit, a first sync of the largest bench organization peaked at 770–850 MB, of which 300–450 MB were freed
// pages not yet returned. With no decay the same load peaks at 510 MB for about a tenth more time
// (docs/performance.md, "Y5").
export const PROMPT_RETURN_CONF = 'dirty_decay_ms:0,muzzy_decay_ms:0';

// The ingest follower builds a batch every few seconds out of much the same memory. Returned after a second,
// every batch took its pages from the system again: on a virtual machine where a first touch of a page costs
// 13–21 µs, 24 small batches 4 s apart cost 62–65 CPU-s with 1.31–1.38 million page faults, against 46–50
// CPU-s and 0.60–0.62 million with ten seconds, for a peak 7 % higher (docs/performance.md, "The follower's
// freed pages kept ten seconds").
export const BETWEEN_BATCHES_CONF = 'dirty_decay_ms:10000,muzzy_decay_ms:10000';

/**
 * The allocator setting `command` of the `explorer` CLI runs with: for a sync, freed memory returned at once
 * (its memory is SYNC_MEMORY_LIMIT's, not that plus what DuckDB freed); for the ingest follower, kept from one
 * batch to the next; DuckDB's own for the others. A DUCKDB_JE_MALLOC_CONF in `env`, even empty, is kept.
 */
export function setAllocatorFor(command: string | undefined, env: NodeJS.ProcessEnv = process.env): void {
  const conf = command === 'sync' ? PROMPT_RETURN_CONF : command === 'ingest' ? BETWEEN_BATCHES_CONF : undefined;
  if (conf !== undefined) env.DUCKDB_JE_MALLOC_CONF ??= conf;
}
