// The inputs of openApiDocument for a running service: its configuration, the catalog instance the query
// validator uses (catalogFor caches one per engine name), the saved-view body schema and the version.
import { readFileSync } from 'node:fs';
import { catalogFor } from '../catalog/catalog.js';
import type { Config } from '../config.js';
import { VERSION } from '../version.js';
import type { OpenApiOptions } from './document.js';

// Compiled to dist/src/openapi/: the project root is three levels up.
const ROOT = new URL('../../../', import.meta.url);
const readJson = (path: string) => JSON.parse(readFileSync(new URL(path, ROOT), 'utf8')) as Record<string, unknown>;

type Settings = Pick<Config, 'engine' | 'publicUrl' | 'queryTimeoutMs' | 'rateLimitMax' | 'rateLimitWindowMs' | 'metricsToken' | 'metricsPublic'>;

export function openApiOptions(config: Settings): OpenApiOptions {
  return {
    catalog: catalogFor(config.engine),
    publicUrl: config.publicUrl,
    queryTimeoutMs: config.queryTimeoutMs,
    rateLimit: { max: config.rateLimitMax, windowMs: config.rateLimitWindowMs },
    version: VERSION,
    savedViewBodySchema: readJson('schemas/saved-view-body.schema.json'),
    notificationConfigurationBodySchema: readJson('schemas/notification-configuration-body.schema.json'),
    metrics: { token: config.metricsToken !== null, public: config.metricsPublic },
  };
}
