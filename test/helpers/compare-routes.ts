// The routes two servers that must answer alike are compared on, and an answer with what differs by server
// put aside: its own address and snapshot ids.
import { catalogFor } from '../../src/catalog/catalog.js';
import type { RunningServer } from '../../src/server.js';
import { clientQuery } from './harness.js';

/** Queries of every view (paged, sorted, filtered), its export and a summary: what does not name snapshots. */
export function comparedRoutes(org: string): string[] {
  const base = `/api/v2/organizations/${encodeURIComponent(org)}/explorer`;
  return catalogFor().views.flatMap((view) => {
    const [first, second] = view.fields;
    const name = view.identifying[0]!;
    return [
      `${base}?type=${view.name}&page%5Bsize%5D=100`,
      `${base}${clientQuery({ type: view.name, sort: `-${second!.name}`, 'page[size]': '7', 'page[number]': '2' })}`,
      `${base}${clientQuery({ type: view.name, [`filter[0][${name}][contains][0]`]: 'a', sort: first!.name })}`,
      `${base}/export/csv?type=${view.name}`,
      `${base}/summary${clientQuery({ type: view.name, group_by: name, 'page[size]': '100' })}`,
    ];
  });
}

/** `path` on `server` with `token`: the status and the body, the server's address and snapshot ids put aside. */
export async function comparableAnswer(server: RunningServer, path: string, token: string | undefined): Promise<{ status: number; body: string }> {
  const res = await fetch(`${server.url}${path}`, { headers: { Authorization: `Bearer ${token}` } });
  return { status: res.status, body: (await res.text()).split(server.url).join('<server>').replace(/\d{8}T\d{9}Z-[0-9a-z]+/g, '<snapshot>') };
}
