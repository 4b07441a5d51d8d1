import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/**
 * Custom search attributes that operators filter on in the Temporal UI. The dev server,
 * the test environments and docker-compose register exactly these.
 */
export const SEARCH_ATTRIBUTE_DEFINITIONS = {
  TeamId: 'Keyword',
  CallId: 'Keyword',
  CallStatus: 'Keyword',
  CallType: 'Keyword',
  WebSessionId: 'Keyword',
  HookId: 'Keyword',
  BatchId: 'Keyword',
  BatchStatus: 'Keyword',
  WebhookEndpointId: 'Keyword',
  WebhookEventType: 'Keyword',
} as const satisfies Record<string, 'Keyword' | 'Int' | 'Datetime' | 'Text'>;

export const TEAM_ID = defineSearchAttributeKey('TeamId', SearchAttributeType.KEYWORD);
export const CALL_ID = defineSearchAttributeKey('CallId', SearchAttributeType.KEYWORD);
export const CALL_STATUS = defineSearchAttributeKey('CallStatus', SearchAttributeType.KEYWORD);
export const CALL_TYPE = defineSearchAttributeKey('CallType', SearchAttributeType.KEYWORD);
export const WEB_SESSION_ID = defineSearchAttributeKey('WebSessionId', SearchAttributeType.KEYWORD);
export const HOOK_ID = defineSearchAttributeKey('HookId', SearchAttributeType.KEYWORD);
export const BATCH_ID = defineSearchAttributeKey('BatchId', SearchAttributeType.KEYWORD);
export const BATCH_STATUS = defineSearchAttributeKey('BatchStatus', SearchAttributeType.KEYWORD);
export const WEBHOOK_ENDPOINT_ID = defineSearchAttributeKey('WebhookEndpointId', SearchAttributeType.KEYWORD);
export const WEBHOOK_EVENT_TYPE = defineSearchAttributeKey('WebhookEventType', SearchAttributeType.KEYWORD);
