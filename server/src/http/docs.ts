import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import type { Context, Next } from 'koa';

/**
 * The human-readable API reference: Swagger UI from the locally installed swagger-ui-dist package
 * (no CDN), pointed at /api/v1/openapi.json.
 */
const require = createRequire(import.meta.url);
const assetDir = path.dirname(require.resolve('swagger-ui-dist/package.json'));
const ASSETS = new Set(['swagger-ui.css', 'swagger-ui-bundle.js', 'swagger-ui-standalone-preset.js', 'favicon-32x32.png']);
const TYPES: Record<string, string> = { '.css': 'text/css', '.js': 'application/javascript', '.png': 'image/png' };

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>usage-monitor API reference</title>
  <link rel="stylesheet" href="/api/v1/docs/swagger-ui.css">
  <link rel="icon" href="/api/v1/docs/favicon-32x32.png">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/api/v1/docs/swagger-ui-bundle.js"></script>
  <script src="/api/v1/docs/init.js"></script>
</body>
</html>`;

// Inline scripts are forbidden by the CSP below, so the initializer is its own file.
const INIT = `window.ui = SwaggerUIBundle({ url: '/api/v1/openapi.json', dom_id: '#swagger-ui', deepLinking: true, persistAuthorization: false });`;

const CSP = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'";

export async function docsMiddleware(ctx: Context, next: Next): Promise<void> {
  if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next();
  const m = /^\/api\/v1\/docs(?:\/(.*))?$/.exec(ctx.path);
  if (!m) return next();
  const file = m[1] ?? '';
  ctx.set('Content-Security-Policy', CSP);
  if (file === '' || file === 'index.html') {
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = PAGE;
    return;
  }
  if (file === 'init.js') {
    ctx.type = 'application/javascript';
    ctx.body = INIT;
    return;
  }
  if (!ASSETS.has(file)) return next();
  ctx.type = TYPES[path.extname(file)] ?? 'application/octet-stream';
  ctx.set('Cache-Control', 'public, max-age=86400');
  ctx.body = fs.createReadStream(path.join(assetDir, file));
}
