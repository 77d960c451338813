// The Notifications panel of an open saved view (docs/notifications.md, "The page"): its configurations with
// their last delivery (green or red), and controls to create, edit, enable, disable, verify and delete them, the
// threshold's measure chosen from the view's number fields.
import type { Api } from './api.js';
import type { WebView } from './catalog.js';
import { h } from './dom.js';

interface DeliveryResponse { url: string; code: number | null; body: string; 'sent-at': string; successful: boolean; attempt: number }
interface Configuration {
  id: string;
  attributes: {
    name: string; enabled: boolean; 'destination-type': string; url: string; triggers: string[];
    threshold: { measure: string; above?: number; below?: number } | null; 'delivery-responses': DeliveryResponse[];
  };
}

const TRIGGERS: [string, string][] = [
  ['explorer:rows-added', 'rows added'], ['explorer:rows-removed', 'rows removed'], ['explorer:rows-changed', 'rows changed'], ['explorer:threshold', 'a threshold crossed'],
];
const TYPE = 'notification-configurations';

export interface NotificationsPanel {
  /** Shows the panel for a saved view (its API path and its view type), or hides it with null. */
  show(view: { path: string; name: string; catalogView: WebView } | null): Promise<void>;
}

export function notificationsPanel(root: HTMLElement, api: Api, report: (e: unknown) => void, say: (text: string) => void): NotificationsPanel {
  let current: { path: string; name: string; catalogView: WebView } | null = null;
  /** The configuration the form edits; null: the form creates one. */
  let editing: Configuration | null = null;
  const list = h('ul', { id: 'notify-list', class: 'saved-list', 'aria-label': 'Notification configurations' });
  const empty = h('p', { id: 'notify-empty', class: 'hint' }, 'No notifications yet: create one below.');
  const form = h('form', { id: 'notify-form', novalidate: true });
  root.replaceChildren(h('h2', { id: 'notifications-heading' }, 'Notifications'), empty, list, form);

  const path = () => `${current!.path}/notification-configurations`;

  async function load(): Promise<void> {
    if (!current) return;
    try {
      const { body } = await api.json<{ data: Configuration[] }>(path());
      empty.hidden = body.data.length > 0;
      list.replaceChildren(...body.data.map(item));
    } catch (e) {
      report(e);
    }
  }

  function item(c: Configuration): HTMLLIElement {
    const last = c.attributes['delivery-responses'][0];
    const status = last === undefined ? h('span', { class: 'badge delivery-none' }, 'not sent yet')
      : h('span', { class: `badge ${last.successful ? 'delivery-ok' : 'delivery-failed'}`, title: `${last['sent-at']}: ${last.body}` },
        last.successful ? `delivered (${last.code})` : `failed (${last.code ?? 'no answer'})`);
    const act = (label: string, run: () => Promise<void>) => h('button', { type: 'button', class: `small notify-${label.toLowerCase()}`, 'aria-label': `${label} “${c.attributes.name}”`, onclick: () => { void run(); } }, label);
    return h('li', { 'data-id': c.id, class: c.attributes.enabled ? null : 'disabled' },
      h('span', { class: 'saved-name' }, c.attributes.name),
      h('span', { class: 'badge' }, c.attributes['destination-type']),
      status,
      h('span', { class: 'inline' },
        act('Verify', async () => {
          const { body } = await api.json<{ data: DeliveryResponse }>(`${path()}/${c.id}/actions/verify`, { method: 'POST' }).catch((e: unknown) => { report(e); return { body: null }; });
          if (body) say(body.data.successful ? `The test notification to “${c.attributes.name}” was delivered (${body.data.code}).` : `The test notification to “${c.attributes.name}” failed (${body.data.code ?? body.data.body}).`);
          await load();
        }),
        act('Edit', async () => {
          editing = c;
          renderForm();
          (form.querySelector('#notify-name') as HTMLInputElement).focus();
        }),
        act(c.attributes.enabled ? 'Disable' : 'Enable', async () => {
          await api.json(`${path()}/${c.id}`, { method: 'PATCH', body: { data: { type: TYPE, attributes: { enabled: !c.attributes.enabled } } } }).catch(report);
          await load();
        }),
        act('Delete', async () => {
          await api.request(`${path()}/${c.id}`, { method: 'DELETE' }).catch(report);
          say(`Deleted the notification “${c.attributes.name}”.`);
          await load();
        })));
  }

  function renderForm(): void {
    const sums = current!.catalogView.fields.filter((f) => f.type === 'number').map((f) => f.name);
    const was = editing?.attributes;
    const input = (id: string, label: string, attrs: Record<string, string | boolean>) =>
      h('div', { class: 'field' }, h('label', { for: id }, label), h('input', { id, ...attrs }));
    const option = (value: string, text: string, chosen: boolean) => h('option', { value, selected: chosen }, text);
    const direction = was?.threshold?.below !== undefined ? 'below' : 'above';
    form.replaceChildren(
      h('h3', {}, was ? `Edit “${was.name}”` : `New notification for “${current!.name}”`),
      input('notify-name', 'Name', { type: 'text', maxlength: '255', autocomplete: 'off', value: was?.name ?? '' }),
      h('div', { class: 'field' }, h('label', { for: 'notify-type' }, 'Destination'),
        h('select', { id: 'notify-type' }, ...['generic', 'slack', 'microsoft-teams'].map((t) => option(t, t, was?.['destination-type'] === t)))),
      input('notify-url', 'URL', { type: 'url', autocomplete: 'off', placeholder: 'https://…', value: was?.url ?? '' }),
      input('notify-token', was ? 'Token (empty: keep the one set)' : 'Token (signs a generic body; optional)', { type: 'password', autocomplete: 'off' }),
      h('fieldset', {}, h('legend', {}, 'Tell me when'),
        ...TRIGGERS.map(([value, label]) => h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'notify-trigger', value, checked: was?.triggers.includes(value) ?? false }), ` ${label}`))),
      h('div', { class: 'field inline' },
        h('label', { for: 'notify-measure' }, 'Threshold'),
        h('select', { id: 'notify-measure' }, option('count', 'count', was?.threshold?.measure === 'count'), ...sums.map((f) => option(`sum:${f}`, `sum of ${f}`, was?.threshold?.measure === `sum:${f}`))),
        h('select', { id: 'notify-direction', 'aria-label': 'above or below' }, option('above', 'above', direction === 'above'), option('below', 'below', direction === 'below')),
        h('input', { id: 'notify-value', type: 'number', 'aria-label': 'Threshold value', value: String(was?.threshold?.above ?? was?.threshold?.below ?? 0) })),
      h('button', { type: 'submit', id: 'notify-create' }, was ? 'Save changes' : 'Create notification'),
      ...(was ? [h('button', { type: 'button', id: 'notify-cancel', onclick: () => { editing = null; renderForm(); } }, 'Cancel')] : []),
    );
  }

  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const value = (id: string) => (form.querySelector(`#${id}`) as HTMLInputElement | HTMLSelectElement).value;
    const triggers = [...form.querySelectorAll<HTMLInputElement>('input[name=notify-trigger]:checked')].map((b) => b.value);
    const type = value('notify-type');
    const attributes: Record<string, unknown> = { name: value('notify-name'), 'destination-type': type, url: value('notify-url'), triggers };
    if (type === 'generic' && value('notify-token') !== '') attributes.token = value('notify-token');
    attributes.threshold = triggers.includes('explorer:threshold') ? { measure: value('notify-measure'), [value('notify-direction')]: Number(value('notify-value')) } : null;
    const edited = editing;
    void (async () => {
      try {
        if (edited) await api.json(`${path()}/${edited.id}`, { method: 'PATCH', body: { data: { type: TYPE, attributes } } });
        else await api.json(path(), { method: 'POST', body: { data: { type: TYPE, attributes } } });
        say(`${edited ? 'Saved' : 'Created'} the notification “${String(attributes.name).trim()}”.`);
        editing = null;
        renderForm();
        await load();
      } catch (e) {
        report(e);
      }
    })();
  });

  return {
    async show(view) {
      current = view;
      editing = null;
      root.hidden = view === null;
      if (!view) return;
      renderForm();
      await load();
    },
  };
}
