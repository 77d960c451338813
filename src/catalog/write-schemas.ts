// Writes the default-engine JSON Schemas to schemas/ so that they are visible to clients and reviewers;
// a test checks that the committed files match the catalog.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { catalogFor } from './catalog.js';
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
}
