// What a notification says (docs/notifications.md, "What is sent"): the facts of one configuration's fired
// triggers between two snapshots, recorded once when the pair is checked, and rendered for the destination
// type when sent: the generic JSON body as it is, a Slack Block Kit message, a Microsoft Teams Adaptive Card.
import { encodeStrict } from '../query/query-string.js';
import type { NotificationConfiguration, SavedView } from '../store/state-store.js';
import type { FiredTrigger } from './check-pair.js';

export interface NotificationItem {
  trigger: string;
  message: string;
  counts?: { added: number; removed: number; changed: number };
  measure?: { name: string; before: number | null; after: number | null; threshold: number };
  rows: Record<string, unknown>[];
  changes_url: string | null;
}

/** The generic body (payload_version 1). */
export interface NotificationFacts {
  payload_version: 1;
  notification_configuration_id: string;
  notification_configuration_name: string;
  organization_name: string;
  view_id: string;
  view_name: string;
  view_url: string;
  from_snapshot: string | null;
  to_snapshot: string;
  to_loaded_at: string;
  notifications: NotificationItem[];
}

/**
 * The page's link that opens the saved view by its id (`view=`): the page reads the view as it is saved when
 * the link is followed, so an edit made since is what it shows, with the view's notifications panel.
 */
export function viewPageUrl(publicUrl: string, view: SavedView): string {
  return `${publicUrl}/explorer#org=${encodeStrict(view.organization)}&view=${encodeStrict(view.id)}`;
}

const plural = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;

function sentence(view: SavedView, fired: FiredTrigger): string {
  const name = JSON.stringify(view.name);
  if (fired.trigger === 'explorer:threshold') {
    const m = fired.measure!;
    const line = m.threshold.above !== undefined ? `above ${m.threshold.above}` : `below ${m.threshold.below}`;
    return `${m.name} of ${name} went ${line}: ${m.before ?? 'none'} → ${m.after ?? 'none'}.`;
  }
  const c = fired.counts!;
  const [n, what] = fired.trigger === 'explorer:rows-added' ? [c.added, 'entered'] : fired.trigger === 'explorer:rows-removed' ? [c.removed, 'left'] : [c.changed, 'changed in'];
  return `${plural(n, 'row')} ${what} ${name}.`;
}

/** The facts of `fired` for `configuration`, between `from` (null: none before) and `to`. */
/** What every body says of its configuration and view. */
const about = (publicUrl: string, view: SavedView, configuration: NotificationConfiguration) => ({
  payload_version: 1 as const,
  notification_configuration_id: configuration.id,
  notification_configuration_name: configuration.name,
  organization_name: view.organization,
  view_id: view.id,
  view_name: view.name,
  view_url: viewPageUrl(publicUrl, view),
});

export function notificationFacts(opts: {
  publicUrl: string; view: SavedView; configuration: NotificationConfiguration; from: string | null; to: string; toLoadedAt: string; fired: FiredTrigger[];
}): NotificationFacts {
  const { publicUrl, view, configuration, from, to } = opts;
  const api = `${publicUrl}/api/v2/organizations/${encodeStrict(view.organization)}/explorer/views/${view.id}`;
  return {
    ...about(publicUrl, view, configuration),
    from_snapshot: from,
    to_snapshot: to,
    to_loaded_at: opts.toLoadedAt,
    notifications: opts.fired.map((f) => ({
      trigger: f.trigger,
      message: sentence(view, f),
      ...(f.counts ? { counts: f.counts } : {}),
      ...(f.measure ? { measure: { name: f.measure.name, before: f.measure.before, after: f.measure.after, threshold: (f.measure.threshold.above ?? f.measure.threshold.below)! } } : {}),
      rows: f.rows,
      changes_url: from === null ? null : `${api}/changes?from=${encodeStrict(from)}&to=${encodeStrict(to)}`,
    })),
  };
}

/** The request body for the destination type: JSON text. */
export function renderBody(destinationType: NotificationConfiguration['destinationType'], facts: NotificationFacts): string {
  if (destinationType === 'generic') return JSON.stringify(facts);
  const title = `${facts.organization_name}: ${facts.view_name}`;
  if (destinationType === 'slack') {
    return JSON.stringify({
      text: `${title}: ${facts.notifications.map((n) => n.message).join(' ')}`,
      blocks: [
        { type: 'header', text: { type: 'plain_text', text: title.slice(0, 150) } },
        ...facts.notifications.map((n) => ({
          type: 'section',
          text: { type: 'mrkdwn', text: `${n.message}${n.rows.length > 0 ? `\n${n.rows.slice(0, 10).map((r) => `• ${String(Object.values(r).slice(2).join(' · ') || r.id)}`).join('\n')}` : ''}` },
        })),
        { type: 'actions', elements: [{ type: 'button', text: { type: 'plain_text', text: 'Open the view' }, url: facts.view_url }] },
      ],
    });
  }
  return JSON.stringify({
    type: 'message',
    attachments: [{
      contentType: 'application/vnd.microsoft.card.adaptive',
      content: {
        $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
        type: 'AdaptiveCard',
        version: '1.4',
        body: [
          { type: 'TextBlock', size: 'Medium', weight: 'Bolder', text: title, wrap: true },
          ...facts.notifications.map((n) => ({ type: 'TextBlock', text: n.message, wrap: true })),
        ],
        actions: [{ type: 'Action.OpenUrl', title: 'Open the view', url: facts.view_url }],
      },
    }],
  });
}

/** The facts of a test notification (`actions/verify`): no snapshot pair, one item that says what it is. */
export function verificationFacts(publicUrl: string, view: SavedView, configuration: NotificationConfiguration): NotificationFacts {
  return {
    ...about(publicUrl, view, configuration),
    from_snapshot: null,
    to_snapshot: '',
    to_loaded_at: new Date().toISOString(),
    notifications: [{ trigger: 'verification', message: `A test notification for ${JSON.stringify(view.name)}: this destination receives its notifications.`, rows: [], changes_url: null }],
  };
}
