// The API reference page (GET /api/v1/docs) over the real app: its files over HTTP, and the
// page itself in headless Chromium (Debian's /usr/bin/chromium driven by playwright-core),
// which must render every path of /api/v1/openapi.json from files this server serves.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { type Browser } from 'playwright-core';
import { startTestApi, type TestApi } from '../support/app.js';
import { createTimeSkippingEnv } from '../support/temporal.js';
import { launchChromium } from '../support/chromium.js';

let env: TestWorkflowEnvironment;
let app: TestApi;
let browser: Browser;

before(async () => {
  env = await createTimeSkippingEnv();
  app = await startTestApi({ temporal: env.client });
  browser = await launchChromium(['--headless']);
});

after(async () => {
  await browser?.close();
  await app?.close();
  await env?.teardown();
});

/** Every source directive of the policy names only 'self', 'none' or (images) data:. */
function assertSelfOnly(csp: string | null): void {
  assert.ok(csp, 'a Content-Security-Policy header');
  for (const directive of csp.split(';').map((d) => d.trim()).filter(Boolean)) {
    const [name, ...sources] = directive.split(/\s+/);
    const allowed = name === 'img-src' ? ["'self'", 'data:'] : ["'self'", "'none'"];
    for (const source of sources) assert.ok(allowed.includes(source), `${name} allows ${source}`);
  }
  assert.match(csp, /script-src 'self'(;|$)/);
  assert.match(csp, /connect-src 'self'(;|$)/);
}

describe('the page and its files over HTTP', () => {
  test('GET /api/v1/docs answers HTML without a key, with a policy that allows only this origin', async () => {
    const res = await app.request('GET', '/api/v1/docs');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html; charset=utf-8/);
    assertSelfOnly(res.headers.get('content-security-policy'));
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    assert.match(res.text, /<script src="\/api\/v1\/docs\/assets\/swagger-ui-bundle\.js"><\/script>/);
    assert.doesNotMatch(res.text, /<script>|<style|https?:\/\//, 'no inline script or style, no absolute URL');
  });

  test('each file answers with its own content type; the bundle is the one in node_modules', async () => {
    const expected: Record<string, RegExp> = {
      'swagger-ui-bundle.js': /^text\/javascript; charset=utf-8$/,
      'swagger-ui.css': /^text\/css; charset=utf-8$/,
      'docs.js': /^text\/javascript; charset=utf-8$/,
      'favicon-32x32.png': /^image\/png$/,
    };
    for (const [file, type] of Object.entries(expected)) {
      const res = await app.request('GET', `/api/v1/docs/assets/${file}`);
      assert.equal(res.status, 200, file);
      assert.match(res.headers.get('content-type') ?? '', type, file);
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff', file);
      assert.ok(res.headers.get('etag'), file);
    }
    const bundle = await app.request('GET', '/api/v1/docs/assets/swagger-ui-bundle.js');
    assert.ok(bundle.text.includes('SwaggerUIBundle'));
    assert.ok(bundle.text.length > 500_000, 'the whole bundle');
    const init = await app.request('GET', '/api/v1/docs/assets/docs.js');
    assert.match(init.text, /url: '\/api\/v1\/openapi\.json'/);
    assert.match(init.text, /validatorUrl: null/, 'the document is never sent to an online validator');
  });

  test('a file off the list answers 404 Not found, including paths that try to leave the folder', async () => {
    for (const file of ['package.json', 'index.html', '..%2Fpackage.json', '..%2F..%2F..%2Fpackage.json', '%2Fetc%2Fpasswd']) {
      const res = await app.request('GET', `/api/v1/docs/assets/${file}`);
      assert.equal(res.status, 404, file);
      assert.deepEqual(res.json, { success: false, message: 'Not found' }, file);
    }
  });

  test('a request naming the current ETag answers 304 with no body', async () => {
    const first = await app.request('GET', '/api/v1/docs/assets/swagger-ui.css');
    const etag = first.headers.get('etag')!;
    const again = await app.request('GET', '/api/v1/docs/assets/swagger-ui.css', { headers: { 'If-None-Match': etag } });
    assert.equal(again.status, 304);
    assert.equal(again.text, '');
    const stale = await app.request('GET', '/api/v1/docs/assets/swagger-ui.css', { headers: { 'If-None-Match': '"not-the-etag"' } });
    assert.equal(stale.status, 200);
  });

  test('the OpenAPI document describes the page and its files', async () => {
    const res = await app.request('GET', '/api/v1/openapi.json');
    const page = res.json.paths['/api/v1/docs']?.get;
    assert.ok(page, '/api/v1/docs is described');
    assert.ok(page.responses['200'].content['text/html'], 'as HTML');
    assert.deepEqual(page.security, []);
    assert.ok(res.json.paths['/api/v1/docs/assets/{file}']?.get, 'the files are described');
  });
});

describe('the page in Chromium', () => {
  test('renders every path of openapi.json, loading nothing from outside this server and breaking no policy', async () => {
    const doc = await app.request('GET', '/api/v1/openapi.json');
    const paths = Object.keys(doc.json.paths);
    const operations = Object.values(doc.json.paths as Record<string, object>).reduce((n, item) => n + Object.keys(item).length, 0);
    assert.ok(paths.length >= 20, `the document has the service's paths (${paths.length})`);

    const origin = new URL(app.url).origin;
    const context = await browser.newContext();
    const outside: string[] = [];
    const loaded: string[] = [];
    // Every request the page makes passes here: ours go on, anything else is recorded and stopped.
    await context.route('**/*', async (route) => {
      const url = route.request().url();
      if (new URL(url).origin === origin) {
        loaded.push(url);
        await route.continue();
      } else {
        outside.push(url);
        await route.abort();
      }
    });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (msg) => {
      if (msg.type() === 'error' || /Content Security Policy/i.test(msg.text())) problems.push(`${msg.type()}: ${msg.text()}`);
    });
    page.on('pageerror', (err) => problems.push(`pageerror: ${err.message}`));
    try {
      const res = await page.goto(`${app.url}/api/v1/docs`);
      assert.equal(res?.status(), 200);
      // Rendered: one block per operation of the document.
      await page.waitForFunction((n) => document.querySelectorAll('.opblock').length === n, operations, { timeout: 30_000 });
      // Swagger UI puts zero-width spaces before the slashes of a path (line-break hints).
      const text = (await page.evaluate(() => document.body.textContent ?? '')).replace(/\u200b/g, '');
      const missing = paths.filter((p) => !text.includes(p));
      assert.deepEqual(missing, [], 'every path appears on the page');
      assert.ok(text.includes('Voice Agent Calling API'), 'the title of the document');

      assert.deepEqual(outside, [], 'no request left this server');
      for (const file of ['/api/v1/docs/assets/swagger-ui-bundle.js', '/api/v1/docs/assets/swagger-ui.css', '/api/v1/docs/assets/docs.js', '/api/v1/openapi.json']) {
        assert.ok(loaded.includes(origin + file), `loaded ${file}`);
      }
      assert.deepEqual(problems, [], 'no console error, page error or policy violation');
    } finally {
      await context.close();
    }
  });
});
