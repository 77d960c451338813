// Which retained snapshot a request reads (docs/history.md): `snapshot=<id>` or `as_of=<datetime>` on
// queries, `from` / `to` (and their `_as_of` forms) on changes. Pure: the caller passes the retained
// snapshots that include the organization, oldest first.
import { badParameter } from '../errors.js';
import { parseDatetime } from './values.js';

export interface Retained {
  id: string;
  /** ISO 8601 in UTC, as the manifest records it. */
  loadedAt: string;
}

/** Epoch milliseconds of a §4 datetime parameter, or a 400 naming it. */
export function datetimeParameter(name: string, text: string): number {
  try {
    return Date.parse(`${parseDatetime(text).replace(' ', 'T')}Z`);
  } catch (e) {
    throw badParameter(name, `${JSON.stringify(text)} is not a datetime for ${name}: ${(e as Error).message}.`);
  }
}

/**
 * The snapshot named by `<idName>` or `<asOfName>` in `params`, or undefined when neither is given.
 * Throws a 400 naming the parameter for both at once, an id that is not retained for this organization
 * (never a 404: the organization exists), or a datetime before every retained snapshot.
 */
export function chooseSnapshot<T extends Retained>(
  params: ReadonlyMap<string, string>, retained: readonly T[], idName = 'snapshot', asOfName = 'as_of',
): T | undefined {
  const id = params.get(idName);
  const asOf = params.get(asOfName);
  if (id !== undefined && asOf !== undefined) {
    throw badParameter(asOfName, `Give ${idName} or ${asOfName}, not both.`);
  }
  if (id !== undefined) {
    const found = retained.find((s) => s.id === id);
    if (!found) throw badParameter(idName, `${JSON.stringify(id)} is not a retained snapshot of this organization: GET …/explorer/snapshots lists them.`);
    return found;
  }
  if (asOf !== undefined) {
    const at = datetimeParameter(asOfName, asOf);
    let found: T | undefined;
    for (const s of retained) if (Date.parse(s.loadedAt) <= at) found = s;
    if (!found) throw badParameter(asOfName, `No retained snapshot of this organization was loaded at or before ${asOf}.`);
    return found;
  }
  return undefined;
}

/**
 * The two snapshots a change set compares: `to` defaults to `current`, `from` to the retained snapshot
 * loaded just before `to`. `from` must be older than `to`.
 */
export function chooseChangePair<T extends Retained>(params: ReadonlyMap<string, string>, retained: readonly T[], current: T): { from: T; to: T } {
  const to = chooseSnapshot(params, retained, 'to', 'to_as_of') ?? current;
  const position = retained.findIndex((s) => s.id === to.id);
  const from = chooseSnapshot(params, retained, 'from', 'from_as_of') ?? (position > 0 ? retained[position - 1] : undefined);
  if (!from) throw badParameter('from', `No retained snapshot of this organization is older than ${to.id}: nothing to compare with.`);
  if (retained.findIndex((s) => s.id === from.id) >= position) {
    throw badParameter('from', `The snapshot compared from (${from.id}) must be older than the one compared to (${to.id}).`);
  }
  return { from, to };
}
