// The OpenAPI 3.1 document of the service, built from the view catalog the app uses and the JSON
// Schemas derived from it. Pure: the same options give the same document. Served by src/http/routes/openapi.ts.
import type { Catalog } from '../catalog/catalog.js';
import { operationObject, operationSpecs, type MetricsSetting } from './operations.js';
import { componentParameters } from './parameters.js';
import { componentHeaders, errorComponents, type ResponseOptions } from './responses.js';
import { componentSchemas, type Json } from './schemas.js';

export { OPENAPI_PATH, operationSpecs } from './operations.js';
export type { MetricsSetting } from './operations.js';
export type { Json } from './schemas.js';

export interface OpenApiOptions extends ResponseOptions {
  /** The catalog of the configured engine name: the same instance the query validator uses. */
  catalog: Catalog;
  /** PUBLIC_URL, or null: the document then names the server relative to itself. */
  publicUrl: string | null;
  /** The service's version (package.json). */
  version: string;
  /** schemas/saved-view-body.schema.json. */
  savedViewBodySchema: Json;
  /** schemas/notification-configuration-body.schema.json. */
  notificationConfigurationBodySchema: Json;
  /** How GET /metrics is protected. */
  metrics: MetricsSetting;
}

const DESCRIPTION = (catalog: Catalog) => `Query an organization's workspace inventory: filter, sort and page it as JSON:API, or export it
as CSV; keep queries as saved views. Generated from the view catalog for the engine name \`${catalog.engine}\`
(\`EXPLORER_ENGINE\`), so field names such as \`workspace_${catalog.engine}_version\` are those this server answers.

Views: ${catalog.views.map((v) => `\`${v.name}\``).join(', ')}. Query strings, sort keys and CSV headers use snake_case field names;
JSON attributes the kebab-case ones (the \`Attributes.<view>\` schemas list both, with types).

Every request but ping, health and readiness sends \`Authorization: Bearer <token>\`. Errors are JSON:API documents
(\`{"errors":[{"status","title","detail","source"}]}\`); on organization routes a missing token (401) comes before an unknown
organization (404), which comes before invalid parameters or bodies (400/422). Any path no route matches answers 404,
and a wrong method on a known path (OPTIONS and unknown methods included) 405 with \`Allow\`. Every GET also answers HEAD.
The \`Accept\` header never causes a 406.`;

export function openApiDocument(opts: OpenApiOptions): Json {
  const { catalog } = opts;
  const errors = errorComponents(opts);
  const paths: Record<string, Json> = {};
  for (const spec of operationSpecs(catalog, opts.metrics)) {
    const item = (paths[spec.path] ??= {});
    item[spec.method] = operationObject(spec, opts);
  }
  for (const item of Object.values(paths)) {
    const methods = Object.keys(item).map((m) => m.toUpperCase());
    item.description = `Other methods answer 405 (Allow: ${[...(methods.includes('GET') ? ['HEAD'] : []), ...methods].join(', ')}).`;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Explorer API',
      version: opts.version,
      description: DESCRIPTION(catalog),
      'x-explorer-engine': catalog.engine,
    },
    servers: [opts.publicUrl ? { url: opts.publicUrl, description: 'PUBLIC_URL' } : { url: '/', description: 'This server' }],
    tags: [
      { name: 'Explorer', description: 'Queries and CSV exports.' },
      { name: 'Saved views', description: 'Stored queries of an organization.' },
      { name: 'Across organizations', description: 'Queries, exports and summaries over every organization a token reaches, each row with its organization_name first.' },
      { name: 'History', description: 'The retained snapshots, what changed between two of them, and trends.' },
      { name: 'Summaries', description: 'A query\'s rows counted and summed by group, as JSON or CSV.' },
      { name: 'Notifications', description: 'A saved view\'s notification configurations: where and when to be told that its answer changed.' },
      { name: 'Explorer page', description: 'The web page, served by the same server (no token needed to load it).' },
      { name: 'Service', description: 'Operations and this contract.' },
    ],
    security: [{ bearer: [] }],
    paths,
    components: {
      schemas: { ...componentSchemas(catalog, opts.savedViewBodySchema, opts.notificationConfigurationBodySchema), ...errors.schemas },
      parameters: componentParameters(catalog),
      headers: componentHeaders(opts),
      responses: errors.responses,
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'at-<16 base-62>.<40 base-62>',
          description: 'An organization, team, user or auditor token (`explorer token create`), which may expire. Explorer access to an organization: its '
            + 'organization token, a token of its `owners` team or of a team with read_workspaces or read_projects, a user token of a '
            + 'member of such a team, or an auditor token (every organization, read-only: its writes answer 403); everything else gets the 404. '
            + 'The cross-organization routes read every organization the token reaches.',
        },
        metricsToken: {
          type: 'http',
          scheme: 'bearer',
          description: 'The `METRICS_TOKEN` of the server, for GET /metrics only (when it is set).',
        },
      },
    },
  };
}
