// Saved views in the journal: `put-view` and `del-view` records, names unique within an organization.
import { byCreation, NameTakenError, type SavedQuery, type SavedView, type SavedViewStore } from '../state-store.js';
import { isObj, isStr, type Journal, type JournalPart, type JournalRecord } from './core.js';

export type ViewRecordLine = { v: 1; kind: 'put-view'; view: SavedView } | { v: 1; kind: 'del-view'; organization: string; id: string };

export class JournalSavedViews implements JournalPart, SavedViewStore {
  private views = new Map<string, Map<string, SavedView>>();
  private count = 0;

  constructor(private readonly journal: Journal) {}

  invalidity(rec: Record<string, unknown>): string | undefined | null {
    switch (rec.kind) {
      case 'put-view':
        return isObj(rec.view) && isStr(rec.view.id) && isStr(rec.view.organization) && isStr(rec.view.name)
          ? undefined : 'put-view without view.id, view.organization or view.name';
      case 'del-view': return isStr(rec.id) && isStr(rec.organization) ? undefined : 'del-view without id or organization';
      default: return null;
    }
  }

  apply(record: JournalRecord): void {
    const rec = record as ViewRecordLine;
    if (rec.kind === 'put-view') {
      let org = this.views.get(rec.view.organization);
      if (!org) this.views.set(rec.view.organization, (org = new Map()));
      if (!org.has(rec.view.id)) this.count += 1;
      org.set(rec.view.id, rec.view);
    } else if (rec.kind === 'del-view') {
      const org = this.views.get(rec.organization);
      if (org?.delete(rec.id)) this.count -= 1;
      if (org?.size === 0) this.views.delete(rec.organization);
    }
  }

  reset(): void { this.views = new Map(); this.count = 0; }
  live(): number { return this.count; }
  records(): JournalRecord[] {
    return [...this.views.values()].flatMap((org) => [...org.values()]).sort(byCreation).map((view): ViewRecordLine => ({ v: 1, kind: 'put-view', view }));
  }

  /** Whether the view exists, as of the journal read so far (configurations are created under one). */
  has(organization: string, id: string): boolean {
    return this.views.get(organization)?.has(id) ?? false;
  }

  async listViews(organization: string): Promise<SavedView[]> {
    await this.journal.refresh();
    return [...(this.views.get(organization)?.values() ?? [])].sort(byCreation).map((v) => structuredClone(v));
  }

  async listViewOrganizations(): Promise<string[]> {
    await this.journal.refresh();
    return [...this.views.entries()].filter(([, views]) => views.size > 0).map(([org]) => org).sort();
  }

  async getView(organization: string, id: string): Promise<SavedView | undefined> {
    await this.journal.refresh();
    const view = this.views.get(organization)?.get(id);
    return view && structuredClone(view);
  }

  async createView(view: SavedView): Promise<SavedView> {
    return this.journal.mutate(async () => {
      // Ids are random; a repeat is a caller bug that must not silently replace another view.
      if (this.has(view.organization, view.id)) throw new Error(`saved view id ${view.id} already exists`);
      if (this.nameTaken(view.organization, view.name)) throw new NameTakenError(view.name);
      await this.journal.append({ v: 1, kind: 'put-view', view } satisfies ViewRecordLine);
      return structuredClone(this.views.get(view.organization)!.get(view.id)!);
    });
  }

  async updateView(organization: string, id: string, change: { name: string; query: SavedQuery; updatedAt: string }): Promise<SavedView | undefined> {
    return this.journal.mutate(async () => {
      const current = this.views.get(organization)?.get(id);
      if (!current) return undefined;
      if (this.nameTaken(organization, change.name, id)) throw new NameTakenError(change.name);
      const view = { ...current, name: change.name, query: change.query, updatedAt: change.updatedAt };
      await this.journal.append({ v: 1, kind: 'put-view', view } satisfies ViewRecordLine);
      return structuredClone(this.views.get(organization)!.get(id)!);
    });
  }

  async deleteView(organization: string, id: string): Promise<SavedView | undefined> {
    return this.journal.mutate(async () => {
      const current = this.views.get(organization)?.get(id);
      if (!current) return undefined;
      await this.journal.append({ v: 1, kind: 'del-view', organization, id } satisfies ViewRecordLine);
      return structuredClone(current);
    });
  }

  private nameTaken(organization: string, name: string, exceptId?: string): boolean {
    for (const v of this.views.get(organization)?.values() ?? []) if (v.name === name && v.id !== exceptId) return true;
    return false;
  }
}
