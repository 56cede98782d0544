// A CommonJS module (package.json "type": "commonjs"): these imports become require() calls.
import { createPacedFetch, perSecond } from 'fetch-pacer';
import { createManualClock } from 'fetch-pacer/testing';

const pacedFetch = createPacedFetch({ limits: perSecond(5), clock: createManualClock() });
export { pacedFetch };
