// Development and test entry of the poll worker. Node 20 does not carry the parent's `--import tsx`
// loader hooks into worker threads, so the worker registers tsx itself before loading the
// TypeScript worker (and, through it, plugins' TypeScript sources). Production runs dist/polling/worker.js.
import { register } from 'tsx/esm/api';

register();
const { default: runPoll } = await import('./worker.ts');
export default runPoll;
