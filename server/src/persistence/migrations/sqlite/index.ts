import { Migration20261121000001 } from './Migration20261121000001.js';
import { Migration20261121000002 } from './Migration20261121000002.js';

/** Ordered list of sqlite migrations; a new migration is appended here and never edited after release. */
export const sqliteMigrations = [
  { name: 'Migration20261121000001', class: Migration20261121000001 },
  { name: 'Migration20261121000002', class: Migration20261121000002 },
];
