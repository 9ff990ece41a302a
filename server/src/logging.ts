import { pino, type Logger, type DestinationStream } from 'pino';
import type { Settings } from './config/settings.js';

/** Fields that are never written to the log, at any depth pino can address. */
const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  '*.password',
  '*.api_key',
  '*.apiKey',
  '*.token',
  '*.access_token',
  '*.refresh_token',
  '*.credentials',
  '*.management_key',
  '*.code',
  'password',
  'api_key',
  'token',
  'credentials',
  'code',
];

export function createLogger(settings: Pick<Settings, 'logLevel'>, destination?: DestinationStream): Logger {
  const pretty = process.env.NODE_ENV === 'development' && !destination;
  return pino(
    {
      level: settings.logLevel,
      base: { service: 'usage-monitor' },
      redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
      ...(pretty ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:standard' } } } : {}),
    },
    destination,
  );
}
