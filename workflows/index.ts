// Every workflow of the service, one file each. The worker bundles this module.
export * from './hookRunWorkflow.js';
export * from './callWorkflow.js';
export * from './callsReconcilerWorkflow.js';
export * from './batchWorkflow.js';
export * from './webSessionWorkflow.js';
export * from './webhookDeliveryWorkflow.js';
export * from './webhookDeliverySweeperWorkflow.js';
