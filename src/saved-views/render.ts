// A saved view as a JSON:API resource (docs/interface.md, interface §6 and §8).
import type { SavedView } from '../store/state-store.js';

export const SAVED_VIEW_TYPE = 'explorer-saved-queries';

export function savedViewResource(view: SavedView) {
  return {
    id: view.id,
    type: SAVED_VIEW_TYPE,
    attributes: {
      name: view.name,
      'created-at': view.createdAt,
      'updated-at': view.updatedAt,
      query: view.query,
      'query-type': view.queryType,
    },
  };
}
