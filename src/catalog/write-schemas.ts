// Writes what is derived from the catalog for people and clients to read: the default-engine JSON Schemas
// (schemas/generated/) and the field reference (docs/views.md). A test fails when either drifts.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { catalogFor } from './catalog.js';
import { renderViewDocs } from './render-docs.js';
import { allSchemas } from './schemas.js';

export function renderSchemas(): Map<string, string> {
  const files = new Map<string, string>();
  for (const [id, schema] of Object.entries(allSchemas(catalogFor('terraform')))) {
    files.set(`${id}.schema.json`, JSON.stringify({ $schema: 'http://json-schema.org/draft-07/schema#', ...schema }, null, 2) + '\n');
  }
  return files;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const dir = join(process.cwd(), 'schemas', 'generated');
  mkdirSync(dir, { recursive: true });
  for (const [name, text] of renderSchemas()) writeFileSync(join(dir, name), text);
  mkdirSync(join(process.cwd(), 'docs'), { recursive: true });
  writeFileSync(join(process.cwd(), 'docs', 'views.md'), renderViewDocs());
}
