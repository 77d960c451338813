// docs/views.md, rendered from the catalog so that the field reference cannot drift from the service.
import { catalogFor } from './catalog.js';
import { OPERATORS_BY_TYPE } from './operators.js';

export function renderViewDocs(): string {
  const catalog = catalogFor('terraform');
  const out: string[] = [
    '# Views and fields',
    '',
    '<!-- Generated from src/catalog/views.ts by `npm run build`; do not edit by hand. -->',
    '',
    'Field names are shown for the default engine name `terraform` (`EXPLORER_ENGINE`); with another engine',
    'name `<e>`, `workspace_terraform_version` becomes `workspace_<e>_version`, and likewise',
    '`state_version_terraform_version`. Query strings, sort keys and CSV headers use the snake_case name; JSON',
    'attributes the kebab-case one. With no `fields`, all fields are returned in the order listed here.',
    '',
    '## Operators by field type',
    '',
    '| type | operators |',
    '|---|---|',
    ...Object.entries(OPERATORS_BY_TYPE).map(([type, ops]) => `| ${type} | ${ops.map((o) => `\`${o}\``).join(', ')} |`),
    '',
    'Fields marked *version* sort by version precedence (interface §5). Fields marked *indexed* have an index in',
    'the snapshot: a large organization\'s page that filters one with `is` reads only the matching rows.',
  ];
  for (const view of catalog.views) {
    out.push('', `## \`${view.name}\``, '', `${view.description} Row type \`${view.rowType}\`; default sort \`${view.defaultSort.join(',')}\`, then the row id.`, '');
    out.push('| field | JSON attribute | type | meaning |', '|---|---|---|---|');
    for (const f of view.fields) {
      out.push(`| \`${f.name}\` | \`${f.attribute}\` | ${f.type}${f.version ? ' (version)' : ''}${f.indexed ? ' (indexed)' : ''} | ${f.description.replace(/\|/g, '\\|')} |`);
    }
  }
  return out.join('\n') + '\n';
}
