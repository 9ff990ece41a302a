import type { Route } from '../route.js';
import { authRoutes } from './auth.js';
import { tokenRoutes } from './tokens.js';
import { providerRoutes } from './providers.js';
import { configRoutes } from './configs.js';
import { oauthRoutes } from './oauth.js';
import { pollRoutes, usageRoutes } from './usage.js';

/** Every resource's routes; the router and the OpenAPI document are built from this one list. */
export const resourceRoutes: Route[] = [...authRoutes, ...tokenRoutes, ...providerRoutes, ...configRoutes, ...oauthRoutes, ...pollRoutes, ...usageRoutes];
