// What a notification says, for each destination type: the generic body as documented, a Slack Block Kit
// message and a Microsoft Teams Adaptive Card carrying the same sentences and the link to the view.
import { expect } from 'chai';
import { notificationFacts, renderBody, viewPageUrl } from '../../src/notifications/payload.js';
import type { NotificationConfiguration, SavedView } from '../../src/store/state-store.js';

const view: SavedView = {
  id: 'sq-0000000000000001', organization: 'acme-corp', name: 'old "aws"', queryType: 'providers', createdAt: '', updatedAt: '',
  query: { type: 'providers', filter: [{ field: 'name', operator: 'is', value: ['aws'] }, { field: 'version', operator: 'is_empty', value: [] }], sort: ['-workspace_count'], fields: ['name', 'version'] },
};
const configuration = { id: 'nc-0000000000000001', name: 'aws below 5' } as NotificationConfiguration;
const facts = notificationFacts({
  publicUrl: 'https://explorer.example.com', view, configuration, from: 's1', to: 's2', toLoadedAt: '2026-11-28T00:00:00.000Z',
  fired: [
    { trigger: 'explorer:rows-added', counts: { added: 2, removed: 0, changed: 1 }, rows: [{ id: 'p1', change: 'added', name: 'aws', version: '4.0.0' }] },
    { trigger: 'explorer:threshold', measure: { name: 'sum:workspace_count', before: 90, after: 120, threshold: { measure: 'sum:workspace_count', above: 100 } }, rows: [] },
  ],
});

describe('notification payloads', () => {
  it('says what fired in the generic body, with the counts or the measure, the rows and the links', () => {
    const body = JSON.parse(renderBody('generic', facts));
    expect(body).to.deep.include({ payload_version: 1, notification_configuration_id: 'nc-0000000000000001', notification_configuration_name: 'aws below 5',
      organization_name: 'acme-corp', view_id: 'sq-0000000000000001', view_name: 'old "aws"', from_snapshot: 's1', to_snapshot: 's2' });
    expect(body.notifications.map((n: any) => n.message)).to.deep.equal(['2 rows entered "old \\"aws\\"".', 'sum:workspace_count of "old \\"aws\\"" went above 100: 90 → 120.']);
    expect(body.notifications[1].measure).to.deep.equal({ name: 'sum:workspace_count', before: 90, after: 120, threshold: 100 });
    expect(body.notifications[0].changes_url).to.equal('https://explorer.example.com/api/v2/organizations/acme-corp/explorer/views/sq-0000000000000001/changes?from=s1&to=s2');
  });

  it('links the page to the saved view by its id, not to the query it held when the notification was made', () => {
    expect(viewPageUrl('https://x.example', view)).to.equal(`https://x.example/explorer#org=acme-corp&view=${view.id}`);
    expect(viewPageUrl('https://x.example', { ...view, query: { ...view.query, filter: [] } })).to.equal(viewPageUrl('https://x.example', view));
  });

  it('posts Slack a Block Kit message and Teams an Adaptive Card with the same sentences and link', () => {
    const slack = JSON.parse(renderBody('slack', facts));
    expect(slack.text).to.include('2 rows entered').and.include('went above 100');
    expect(slack.blocks.map((b: any) => b.type)).to.deep.equal(['header', 'section', 'section', 'actions']);
    expect(slack.blocks[1].text.text).to.include('2 rows entered').and.include('aws · 4.0.0');
    expect(slack.blocks[3].elements[0].url).to.equal(facts.view_url);
    const teams = JSON.parse(renderBody('microsoft-teams', facts));
    expect(teams.type).to.equal('message');
    expect(teams.attachments[0].contentType).to.equal('application/vnd.microsoft.card.adaptive');
    const card = teams.attachments[0].content;
    expect(card.type).to.equal('AdaptiveCard');
    expect(card.body.map((b: any) => b.text)).to.deep.equal(['acme-corp: old "aws"', ...facts.notifications.map((n) => n.message)]);
    expect(card.actions[0].url).to.equal(facts.view_url);
  });
});
