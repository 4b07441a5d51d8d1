import type Router from '@koa/router';
import type { Middleware } from 'koa';

/**
 * After the router: a request whose path some route has, but not with its method, answers
 * 405 with `Allow` naming the path's methods (HEAD wherever GET is), as HTTP asks. A path no
 * route has falls through to the error handler's 404 `Not found`.
 */
export function methodNotAllowed(router: Router): Middleware {
  return async (ctx, next) => {
    const matched = router.match(ctx.path, ctx.method);
    if (matched.route || matched.path.length === 0) return next();
    const allowed = new Set(matched.path.flatMap((layer) => layer.methods));
    ctx.status = 405;
    ctx.set('Allow', [...allowed].join(', '));
    ctx.body = { success: false, message: 'Method not allowed' };
  };
}
