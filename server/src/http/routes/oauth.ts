import type { Route } from '../route.js';

/** OAuth routes, generic over plugins that declare `auth.kind: 'oauth'`, with /codex/oauth aliases. */
export const oauthRoutes: Route[] = [];
