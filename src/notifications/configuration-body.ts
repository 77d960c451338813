// The body of a notification configuration's create (POST) or update (PATCH) → the configuration it makes
// (docs/notifications.md, "Configurations"). The shape is checked by
// schemas/notification-configuration-body.schema.json; what spans attributes (a threshold with its trigger, a
// token with a generic destination, a measure of the view's number fields, where the url leads) here.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { readFileSync } from 'node:fs';
import { catalogFor } from '../catalog/catalog.js';
import { ApiError } from '../errors.js';
import type { DeliveryResponse, DestinationType, NotificationConfiguration, NotificationThreshold, NotificationTrigger, SavedView } from '../store/state-store.js';
import { checkDestination, DestinationRefusedError, parseDestination, type DestinationPolicy } from './destination.js';

export const NOTIFICATION_CONFIGURATION_TYPE = 'notification-configurations';

// Compiled when the module loads, so that a broken schema stops the server at start, not a request.
const envelope: ValidateFunction = new Ajv({ allErrors: false, strict: true, strictTypes: false })
  .compile(JSON.parse(readFileSync(new URL('../../../schemas/notification-configuration-body.schema.json', import.meta.url), 'utf8')));

const ATTRIBUTES = '/data/attributes';
const invalid = (attribute: string | null, detail: string) =>
  new ApiError(422, 'invalid notification configuration', detail, { pointer: attribute === null ? '/data' : `${ATTRIBUTES}/${attribute}` });

/** The first schema error, as a 422 naming the member. */
function envelopeError(e: ErrorObject): ApiError {
  const path = e.instancePath;
  const attribute = path.startsWith(ATTRIBUTES) ? path.slice(ATTRIBUTES.length + 1).split('/')[0]! : null;
  switch (e.keyword) {
    case 'required': {
      const missing = (e.params as { missingProperty: string }).missingProperty;
      return new ApiError(422, 'invalid notification configuration', `${missing} is required.`, { pointer: `${path}/${missing}` });
    }
    case 'additionalProperties': {
      const extra = (e.params as { additionalProperty: string }).additionalProperty;
      return new ApiError(422, 'invalid notification configuration', `${JSON.stringify(extra)} is not an attribute of a notification configuration${
        extra === 'delivery-responses' ? ' that can be written (delivery-responses is read-only)' : ''}.`, { pointer: `${path}/${extra}` });
    }
    case 'const': return invalid(null, `data.type must be "${NOTIFICATION_CONFIGURATION_TYPE}".`);
    case 'enum':
      return attribute === 'triggers'
        ? invalid('triggers', 'Each trigger is one of explorer:rows-added, explorer:rows-removed, explorer:rows-changed, explorer:threshold.')
        : invalid(attribute, 'destination-type is one of generic, slack, microsoft-teams.');
    case 'uniqueItems': return invalid('triggers', 'A trigger is named once.');
    case 'minItems': return invalid('triggers', 'triggers names at least one trigger.');
    case 'maxLength': return invalid(attribute, `${attribute} is at most ${(e.params as { limit: number }).limit} characters.`);
    case 'type': return attribute === null ? invalid(null, `${path || 'The body'} must be an object.`) : invalid(attribute, `${attribute} ${path.length > ATTRIBUTES.length + attribute.length + 1 ? `(${path.slice(ATTRIBUTES.length + 1)}) ` : ''}must be ${(e.params as { type: string | string[] }).type}.`);
    default: return attribute === null ? invalid(null, e.message ?? e.keyword) : invalid(attribute, `${attribute}: ${e.message ?? e.keyword}.`);
  }
}

/** The number fields a threshold may sum: the saved view's type's. */
const numberFields = (engine: string, view: SavedView) =>
  catalogFor(engine).view(view.queryType)!.fields.filter((f) => f.type === 'number').map((f) => f.name);

function checkThreshold(engine: string, view: SavedView, threshold: NotificationThreshold): void {
  const sums = numberFields(engine, view);
  const measure = threshold.measure;
  if (measure !== 'count' && !(measure.startsWith('sum:') && sums.includes(measure.slice(4)))) {
    throw invalid('threshold', `threshold.measure is "count" or "sum:<field>" with a number field of ${view.queryType} (${sums.join(', ') || 'it has none'}), not ${JSON.stringify(measure)}.`);
  }
  if ((threshold.above === undefined) === (threshold.below === undefined)) throw invalid('threshold', 'threshold has exactly one of above and below.');
}

export interface ConfigurationContext {
  engine: string;
  view: SavedView;
  policy: DestinationPolicy;
  /** The configuration being updated; undefined on create. */
  current?: NotificationConfiguration;
  /** Id and timestamps of a new configuration. */
  id: string;
  now: string;
}

/**
 * Parses and validates a body into the configuration it makes: a new one, or `current` with the attributes
 * the body carries. Throws ApiError (422 naming the attribute).
 */
export async function parseConfigurationBody(body: unknown, ctx: ConfigurationContext): Promise<NotificationConfiguration> {
  if (!envelope(body)) throw envelopeError(envelope.errors![0]!);
  const given = (body as { data: { attributes: Record<string, unknown> } }).data.attributes;
  const current = ctx.current;
  if (!current) for (const required of ['name', 'destination-type', 'url', 'triggers']) if (given[required] === undefined) throw invalid(required, `${required} is required.`);
  const has = (name: string) => given[name] !== undefined;

  const name = has('name') ? (given.name as string).trim() : current!.name;
  if ([...name].length < 1 || [...name].length > 255) throw invalid('name', 'name must be 1 to 255 characters long, not counting surrounding spaces.');
  const destinationType = (has('destination-type') ? given['destination-type'] : current!.destinationType) as DestinationType;
  const triggers = (has('triggers') ? given.triggers : current!.triggers) as NotificationTrigger[];
  // A PATCH without token keeps it; one that moves away from generic drops it.
  let token = has('token') ? (given.token as string | null) : current?.token ?? null;
  if (token === '') token = null;
  if (destinationType !== 'generic') {
    if (has('token') && token !== null) throw invalid('token', `token signs generic destinations only, not ${destinationType}.`);
    token = null;
  }
  const threshold = (has('threshold') ? given.threshold : current?.threshold ?? null) as NotificationThreshold | null;
  if (triggers.includes('explorer:threshold')) {
    if (threshold === null) throw invalid('threshold', 'threshold is required with the explorer:threshold trigger.');
    checkThreshold(ctx.engine, ctx.view, threshold);
  } else if (threshold !== null && has('threshold')) {
    throw invalid('threshold', 'threshold goes with the explorer:threshold trigger only.');
  }

  let url = current?.url ?? '';
  if (has('url')) {
    try {
      const parsed = parseDestination(given.url as string, ctx.policy);
      await checkDestination(parsed, ctx.policy);
      url = parsed.href;
    } catch (e) {
      if (e instanceof DestinationRefusedError) throw invalid('url', e.message);
      throw e;
    }
  }
  return {
    id: current?.id ?? ctx.id,
    organization: ctx.view.organization,
    viewId: ctx.view.id,
    name,
    enabled: has('enabled') ? (given.enabled as boolean) : current?.enabled ?? true,
    destinationType,
    url,
    token,
    triggers,
    threshold: triggers.includes('explorer:threshold') ? threshold : null,
    createdAt: current?.createdAt ?? ctx.now,
    updatedAt: ctx.now,
  };
}

/** A configuration as a JSON:API resource: the token never answered, the saved view as its subscribable. */
/** A delivery response as `delivery-responses` and `actions/verify` answer it. */
export const deliveryResponseResource = (r: DeliveryResponse) =>
  ({ url: r.url, code: r.code, body: r.body, headers: r.headers, 'sent-at': r.sentAt, successful: r.successful, attempt: r.attempt });

export function configurationResource(c: NotificationConfiguration, deliveryResponses: DeliveryResponse[] = []) {
  return {
    id: c.id,
    type: NOTIFICATION_CONFIGURATION_TYPE,
    attributes: {
      name: c.name,
      enabled: c.enabled,
      'destination-type': c.destinationType,
      url: c.url,
      token: null,
      triggers: c.triggers,
      threshold: c.threshold,
      'delivery-responses': deliveryResponses.map(deliveryResponseResource),
      'created-at': c.createdAt,
      'updated-at': c.updatedAt,
    },
    relationships: { subscribable: { data: { id: c.viewId, type: 'explorer-saved-queries' } } },
  };
}
