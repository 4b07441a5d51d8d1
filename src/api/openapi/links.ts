/**
 * OpenAPI links: from an operation's answer to the operations that take what it returns, so
 * tools (and people reading the document) can follow a resource from its creation. Keyed by
 * operationId, then status; each link names its target by operationId and fills the
 * target's parameters with runtime expressions ($response.body#/..., $request.body#/...).
 */
export interface OperationLink {
  operationId: string;
  parameters: Record<string, string>;
  description: string;
}

const CALL_ID = { call_id: '$response.body#/call_id' };

/** What a call's answer (create, retry, web session or web call) leads to. */
const callLinks: Record<string, OperationLink> = {
  GetCallStatus: { operationId: 'getCallStatus', parameters: CALL_ID, description: 'The call’s status' },
  GetCallResult: { operationId: 'getCallResult', parameters: CALL_ID, description: 'The call’s result once it ended' },
  CancelCall: { operationId: 'cancelCall', parameters: CALL_ID, description: 'Cancel the call' },
  RetryCall: { operationId: 'retryCall', parameters: CALL_ID, description: 'A new attempt of the call once it ended' },
  GetRecording: { operationId: 'getRecording', parameters: CALL_ID, description: 'The call’s recording' },
  CreateRecordingLink: { operationId: 'createRecordingLink', parameters: CALL_ID, description: 'A signed link to the call’s recording' },
};

const LIST_ID = { list_id: '$response.body#/list_id' };
const ENDPOINT_ID = { endpoint_id: '$response.body#/endpoint/id' };
const DNC_NUMBER = { phone_number: '$response.body#/entry/phone_number' };

/** An added do-not-call entry (200 when it was there already, 201 when new) leads to the same operations. */
const doNotCallLinks: Record<string, OperationLink> = {
  GetDoNotCall: { operationId: 'getDoNotCall', parameters: DNC_NUMBER, description: 'The entry' },
  RemoveDoNotCall: { operationId: 'removeDoNotCall', parameters: DNC_NUMBER, description: 'Take the number off the list' },
};

export const OPERATION_LINKS: Record<string, Record<number, Record<string, OperationLink>>> = {
  createPhoneCall: { 201: callLinks },
  retryCall: { 201: callLinks },
  cancelCall: { 200: { RetryCall: callLinks.RetryCall, GetCallStatus: callLinks.GetCallStatus } },
  createContact: {
    201: {
      GetContact: { operationId: 'getContact', parameters: { phone_number: '$request.body#/phone_number' }, description: 'The contact, by the number it was created with' },
      ListCallsOfContact: { operationId: 'listCalls', parameters: { contact_id: '$response.body#/contact_id' }, description: 'The contact’s calls' },
    },
  },
  createList: {
    201: {
      GetList: { operationId: 'getList', parameters: LIST_ID, description: 'The list and its contacts' },
      RenameList: { operationId: 'renameList', parameters: LIST_ID, description: 'Rename the list' },
      DeleteList: { operationId: 'deleteList', parameters: LIST_ID, description: 'Delete the list' },
      AddContactsToList: { operationId: 'addContactsToList', parameters: LIST_ID, description: 'Add contacts to the list' },
      RemoveContactsFromList: { operationId: 'removeContactsFromList', parameters: LIST_ID, description: 'Remove contacts from the list' },
    },
  },
  createWebhookEndpoint: {
    201: {
      GetWebhookEndpoint: { operationId: 'getWebhookEndpoint', parameters: ENDPOINT_ID, description: 'The endpoint' },
      UpdateWebhookEndpoint: { operationId: 'updateWebhookEndpoint', parameters: ENDPOINT_ID, description: 'Change the endpoint' },
      DeleteWebhookEndpoint: { operationId: 'deleteWebhookEndpoint', parameters: ENDPOINT_ID, description: 'Delete the endpoint' },
      RotateWebhookEndpointSecret: { operationId: 'rotateWebhookEndpointSecret', parameters: ENDPOINT_ID, description: 'A new signing secret' },
      ListWebhookDeliveries: { operationId: 'listWebhookDeliveries', parameters: ENDPOINT_ID, description: 'The endpoint’s deliveries' },
    },
  },
  listWebhookDeliveries: {
    200: {
      GetWebhookDelivery: { operationId: 'getWebhookDelivery', parameters: { delivery_id: '$response.body#/deliveries/0/id' }, description: 'The first delivery of the page, with its attempts' },
      RedeliverWebhookDelivery: { operationId: 'redeliverWebhookDelivery', parameters: { delivery_id: '$response.body#/deliveries/0/id' }, description: 'Send the first delivery of the page again' },
    },
  },
  addDoNotCall: { 200: doNotCallLinks, 201: doNotCallLinks },
  createObjectType: {
    201: {
      GetObjectTypeByName: { operationId: 'getObjectTypeByName', parameters: { type_name: '$response.body#/object_type/type_name' }, description: 'The object type' },
    },
  },
};
