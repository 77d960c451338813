// Copies every token, saved view and notification configuration of one store into another (the embedded journal into Redis, so that a
// single node can grow into a cluster). Idempotent: what is already there, identical, is skipped; a
// different view holding the same name is reported as a conflict and left alone.
import { isDeepStrictEqual } from 'node:util';
import { NameTakenError, type StateStore } from './state-store.js';

export interface MigrationReport {
  tokens: number;
  views: number;
  configurations: number;
  skipped: number;
  conflicts: string[];
}

export async function migrateState(from: StateStore, to: StateStore): Promise<MigrationReport> {
  const report: MigrationReport = { tokens: 0, views: 0, configurations: 0, skipped: 0, conflicts: [] };
  for (const token of await from.listTokens()) {
    await to.putToken(token);
    report.tokens++;
  }
  for (const organization of await from.listViewOrganizations()) {
    for (const view of await from.listViews(organization)) {
      const existing = await to.getView(organization, view.id);
      if (existing && !isDeepStrictEqual(existing, view)) {
        report.conflicts.push(`${organization}/${view.id}: a different view with this id exists in the target`);
        continue;
      }
      if (existing) report.skipped++;
      else {
        try {
          await to.createView(view);
          report.views++;
        } catch (e) {
          if (!(e instanceof NameTakenError)) throw e;
          report.conflicts.push(`${organization}/${view.id}: the name ${JSON.stringify(view.name)} is taken in the target`);
          continue;
        }
      }
      for (const configuration of await from.listNotificationConfigurations(organization, view.id)) {
        const there = await to.getNotificationConfiguration(organization, view.id, configuration.id);
        if (there && isDeepStrictEqual(there, configuration)) report.skipped++;
        else if (there) report.conflicts.push(`${organization}/${view.id}/${configuration.id}: a different notification configuration with this id exists in the target`);
        else if (await to.createNotificationConfiguration(configuration)) report.configurations++;
      }
    }
  }
  return report;
}
