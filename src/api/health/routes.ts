import { defineRoute } from '../route.js';
import { z } from '../schemas.js';
import type { AppDeps } from '../deps.js';

const checkState = z.enum(['ok', 'down', 'disabled']);
const healthResponse = z
  .object({
    success: z.boolean(),
    status: z.enum(['ok', 'degraded']),
    checks: z.object({ database: checkState, temporal: checkState, redis: checkState }),
  })
  .openapi('Health');

type CheckState = z.infer<typeof checkState>;

const CHECK_TIMEOUT_MS = 2000;

async function probe(check: () => Promise<unknown>): Promise<CheckState> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      check(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), CHECK_TIMEOUT_MS);
      }),
    ]);
    return 'ok';
  } catch {
    return 'down';
  } finally {
    clearTimeout(timer);
  }
}

export async function healthChecks(deps: AppDeps): Promise<z.infer<typeof healthResponse>['checks']> {
  const [database, temporal, redis] = await Promise.all([
    probe(() => deps.pool.query('SELECT 1')),
    probe(() => deps.temporal.workflowService.getSystemInfo({})),
    // While the rate limiter counts in process because Redis failed it, Redis is down for us.
    deps.redis ? (deps.rateLimiter?.degraded ? Promise.resolve<CheckState>('down') : probe(() => deps.redis!.ping())) : Promise.resolve<CheckState>('disabled'),
  ]);
  return { database, temporal, redis };
}

export const healthRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/v1/health',
    operationId: 'getHealth',
    summary: 'Health of the service and its dependencies',
    description: 'Unauthenticated. 200 when every configured dependency answers; 503 naming the one that is down.',
    tags: ['Meta'],
    auth: 'public',
    responses: {
      200: { description: 'Every dependency is reachable', schema: healthResponse },
      503: { description: 'A dependency is down', schema: healthResponse },
    },
    handler: async (_req, deps) => {
      const checks = await healthChecks(deps);
      const healthy = Object.values(checks).every((c) => c !== 'down');
      return { status: healthy ? 200 : 503, body: { success: healthy, status: healthy ? 'ok' : 'degraded', checks } };
    },
  }),
];
