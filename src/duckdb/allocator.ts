// DuckDB allocates its buffers with the jemalloc it bundles, which keeps freed pages for reuse before it
// returns them to the system (DuckDB sets the decay to about a second). A load churns through its memory
// limit many times over (staged tables, sorts, the view being written, its Parquet copy), so what the
// process holds is its limit plus what it freed in the last second: at a 300MB limit, a first sync of the
// largest bench organization peaked at 770–850 MB, of which 300–450 MB were freed pages not yet returned.
// With no decay the same load peaks at 510 MB for about a tenth more time (docs/performance.md, "Y5").
//
// jemalloc reads its configuration once, at its first allocation: this must run before DuckDB is first
// used in the process. A DUCKDB_JE_MALLOC_CONF set by the caller is kept as it is.
export const PROMPT_RETURN_CONF = 'dirty_decay_ms:0,muzzy_decay_ms:0';

/** Makes DuckDB return freed memory to the system at once, unless DUCKDB_JE_MALLOC_CONF says otherwise. */
export function returnFreedMemoryPromptly(env: NodeJS.ProcessEnv = process.env): void {
  env.DUCKDB_JE_MALLOC_CONF ??= PROMPT_RETURN_CONF;
}
