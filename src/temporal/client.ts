import { Client, Connection } from '@temporalio/client';
import type { Config } from '../config/index.js';
import { temporalClientInterceptors } from '../tracing/tracing.js';

export interface TemporalClient {
  connection: Connection;
  client: Client;
}

/** The one Temporal client of a process (API and CLI), retrying until the server answers; traced when tracing is on. */
export async function connectTemporal(address: string, namespace: string, attempts = 60): Promise<TemporalClient> {
  let lastError: unknown;
  for (let i = 0; i < attempts; i++) {
    try {
      const connection = await Connection.connect({ address, connectTimeout: 2000 });
      return { connection, client: new Client({ connection, namespace, interceptors: temporalClientInterceptors() }) };
    } catch (err) {
      lastError = err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  throw new Error(`Temporal at ${address} did not answer: ${(lastError as Error)?.message}`);
}

export function temporalAddress(config: Config): string {
  return config.TEMPORAL_ADDRESS ?? `127.0.0.1:${config.TEMPORAL_DEV_PORT}`;
}
