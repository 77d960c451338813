// `explorer serve`: the HTTP server, until SIGTERM or SIGINT.
import { loadConfig } from '../config.js';
import { jsonLogger } from '../log.js';
import { parseArgs } from './args.js';
import { startServer } from '../server.js';

export async function serve(argv: string[]): Promise<void> {
  parseArgs(argv, []);
  const config = loadConfig();
  const logger = jsonLogger();
  const uv = config.uvThreadpoolSize;
  const queries = config.poolWorkers * config.workerConcurrency;
  if (uv < queries + 4) logger.log('warn', 'UV_THREADPOOL_SIZE is too small for the query pool; start with `npm run explorer -- serve` or set it', { UV_THREADPOOL_SIZE: uv, concurrent_queries: queries });
  const running = await startServer(config, logger);
  const stop = (signal: string) => {
    logger.log('info', 'signal received', { signal });
    running.shutdown().then(() => process.exit(0), (e) => { logger.log('error', 'shutdown failed', { error: String(e) }); process.exit(1); });
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}
