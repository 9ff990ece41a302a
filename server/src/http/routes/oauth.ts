import { PLUGIN_ID_PATTERN } from '@usage-monitor/core';
import { problemResponses, type RequestInput, type Route, type Schema } from '../route.js';
import type { FlowStartInput, FlowStepInput } from '../../services/oauth-flows.js';

/**
 * OAuth routes, generic over plugins that declare `auth.kind: 'oauth'` with a device and/or browser
 * flow (API.md "Providers and connections"), plus the `/codex/oauth/...` paths of usage-dashboard as
 * aliases for provider `codex`. Flow state stays in server memory (services/oauth-flows.ts).
 */

const providerParam = { type: 'string', pattern: PLUGIN_ID_PATTERN, maxLength: 60, description: 'A provider id from GET /providers' };
const flowIdParam = { type: 'string', pattern: '^[A-Za-z0-9_-]{16,128}$', description: 'The flow_id the start call returned' };

const params = (withProvider: boolean, withFlow: boolean): Schema => ({
  type: 'object',
  additionalProperties: false,
  required: [...(withProvider ? ['provider'] : []), ...(withFlow ? ['flow_id'] : [])],
  properties: { ...(withProvider ? { provider: providerParam } : {}), ...(withFlow ? { flow_id: flowIdParam } : {}) },
});

const startBody: Schema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    extra: {
      type: 'object',
      maxProperties: 100,
      description: "The plugin's settings for the sign-in and for the connection it creates (components.schemas.<Provider>Settings; defaults applied)",
    },
    base_url: { type: ['string', 'null'], maxLength: 2048, pattern: '^(https?://[^\\s]+)?$', description: "Overrides the plugin's default upstream for the new connection" },
  },
};

const stepFields = {
  label: { type: ['string', 'null'], maxLength: 120, description: 'The new connection’s label; blank becomes a unique default' },
  config_id: { type: 'integer', minimum: 1, maximum: 2147483647, description: 'Re-authorize this existing connection of the same provider instead of creating one' },
};
const pollBody: Schema = { type: 'object', additionalProperties: false, properties: stepFields };
const completeBody: Schema = {
  type: 'object',
  additionalProperties: false,
  required: ['callback'],
  properties: {
    callback: { type: 'string', minLength: 1, maxLength: 8192, description: 'The full URL the browser was redirected to (it carries code and state)' },
    ...stepFields,
  },
};

const deviceStart = {
  type: 'object',
  required: ['flow_id', 'user_code', 'verification_uri', 'verification_uri_complete', 'expires_at', 'interval_seconds'],
  properties: {
    flow_id: { type: 'string' },
    user_code: { type: 'string', description: 'Show this to the user' },
    verification_uri: { type: 'string', description: 'Where the user enters the code' },
    verification_uri_complete: { type: ['string', 'null'], description: 'The same page with the code filled in, when the provider has one' },
    expires_at: { type: 'string', format: 'date-time' },
    interval_seconds: { type: 'integer', description: 'Poll no faster than this' },
  },
};
const browserStart = {
  type: 'object',
  required: ['flow_id', 'authorization_url', 'redirect_uri', 'expires_at'],
  properties: {
    flow_id: { type: 'string' },
    authorization_url: { type: 'string', description: 'Open this in a browser' },
    redirect_uri: { type: 'string', description: 'Where the provider sends the browser back; paste that full URL into complete' },
    expires_at: { type: 'string', format: 'date-time' },
  },
};
const stepResult = {
  type: 'object',
  required: ['status'],
  properties: {
    status: { enum: ['pending', 'slow_down', 'complete', 'expired', 'denied', 'error'] },
    interval_seconds: { type: 'integer', description: 'With pending and slow_down: wait this long before the next poll' },
    error: { type: 'string', description: 'With error, expired and denied: what went wrong' },
    config: {
      type: 'object',
      required: ['id', 'provider', 'label'],
      description: 'With complete: the created or re-authorized connection record (as in GET /configs; no credentials)',
    },
  },
};

const DESCRIPTION =
  'Flow state (device codes, PKCE verifiers) is kept in server memory only and never returned. ' +
  'An unknown, finished or forgotten flow_id (and every flow after a restart) is a 404; a flow that expired answers `status: expired` for an hour after. ' +
  '`error` keeps the flow (retry with a corrected callback, or poll again); `complete`, `denied` and `expired` end it.';

type Provider = { provider: string };
type Flow = { flow_id: string };
type Handler<P, B> = (input: RequestInput<P, Record<string, unknown>, B>, provider: string) => Promise<unknown>;

const handlers = {
  deviceStart: (({ body, services }, provider) => services.oauth.startDevice(provider, body)) as Handler<unknown, FlowStartInput>,
  devicePoll: (({ params, body, services }, provider) => services.oauth.pollDevice(provider, params.flow_id, body)) as Handler<Flow, FlowStepInput>,
  browserStart: (({ body, services }, provider) => services.oauth.startBrowser(provider, body)) as Handler<unknown, FlowStartInput>,
  browserComplete: (({ params, body, services }, provider) => services.oauth.completeBrowser(provider, params.flow_id, body)) as Handler<
    Flow,
    FlowStepInput & { callback: string }
  >,
};

interface Operation {
  key: keyof typeof handlers;
  path: string;
  withFlow: boolean;
  body: Schema;
  summary: string;
  responses: Route['responses'];
}

const operations: Operation[] = [
  {
    key: 'deviceStart',
    path: '/oauth/device/start',
    withFlow: false,
    body: startBody,
    summary: 'Start an OAuth device sign-in: show user_code and verification_uri to the user',
    responses: { 200: { description: 'The flow started', schema: deviceStart }, ...problemResponses(400, 401, 403, 404, 502, 504) },
  },
  {
    key: 'devicePoll',
    path: '/oauth/device/{flow_id}/poll',
    withFlow: true,
    body: pollBody,
    summary: 'Poll an OAuth device sign-in; on completion the connection is created (or re-authorized with config_id)',
    responses: { 200: { description: 'The flow status', schema: stepResult }, ...problemResponses(400, 401, 403, 404, 409, 502, 504) },
  },
  {
    key: 'browserStart',
    path: '/oauth/browser/start',
    withFlow: false,
    body: startBody,
    summary: 'Start an OAuth browser sign-in (authorization code with PKCE): open authorization_url',
    responses: { 200: { description: 'The flow started', schema: browserStart }, ...problemResponses(400, 401, 403, 404, 502, 504) },
  },
  {
    key: 'browserComplete',
    path: '/oauth/browser/{flow_id}/complete',
    withFlow: true,
    body: completeBody,
    summary: 'Complete an OAuth browser sign-in with the pasted callback URL; the connection is created (or re-authorized with config_id)',
    responses: { 200: { description: 'The flow status', schema: stepResult }, ...problemResponses(400, 401, 403, 404, 409, 502, 504) },
  },
];

const OPERATION_IDS: Record<Operation['key'], [generic: string, codex: string]> = {
  deviceStart: ['startOAuthDeviceFlow', 'startCodexDeviceFlow'],
  devicePoll: ['pollOAuthDeviceFlow', 'pollCodexDeviceFlow'],
  browserStart: ['startOAuthBrowserFlow', 'startCodexBrowserFlow'],
  browserComplete: ['completeOAuthBrowserFlow', 'completeCodexBrowserFlow'],
};

export const oauthRoutes: Route[] = operations.flatMap((op): Route[] => {
  const handler = handlers[op.key] as Handler<any, any>;
  const [genericId, codexId] = OPERATION_IDS[op.key];
  const common = { method: 'post' as const, tags: ['oauth'], access: 'admin' as const, body: op.body, responses: op.responses };
  return [
    {
      ...common,
      path: `/providers/{provider}${op.path}`,
      operationId: genericId,
      summary: op.summary,
      description: DESCRIPTION,
      params: params(true, op.withFlow),
      handler: (input: RequestInput<Provider & Partial<Flow>>) => handler(input, input.params.provider),
    },
    {
      ...common,
      path: `/codex${op.path}`,
      operationId: codexId,
      summary: `${op.summary} (usage-dashboard path; provider codex)`,
      description: `An alias of ${genericId} for provider \`codex\`. ${DESCRIPTION}`,
      ...(op.withFlow ? { params: params(false, true) } : {}),
      handler: (input: RequestInput) => handler(input, 'codex'),
    },
  ];
});
