import { describe, expect, it } from 'vitest';
import { createRateLimiter } from '../../src/core/limiter.js';
import { perSecond, resolvePolicy } from '../../src/core/policy.js';
import { createPacedFetch } from '../../src/http/paced-fetch.js';
import { createOutbox } from '../../src/offline/outbox.js';
import { createPacer } from '../../src/pacer/pacer.js';
import { crossTabStore } from '../../src/stores/cross-tab/index.js';
import { redisStore } from '../../src/stores/redis/index.js';
import { createManualClock } from '../../src/testing/index.js';

// A misspelt option used to be ignored, and its default used in silence. Each factory now
// names the option it does not know and, when one is near, the option that was meant.
// The casts stand for what a JavaScript caller (or a stale type) can pass.
type Loose = Record<string, unknown>;
const loose = (options: Loose) => options as never;

describe('unknown option names', () => {
  it('names the nearest known option of createPacer', () => {
    expect(() => createPacer(loose({ limits: perSecond(5), concurency: 2 }))).toThrow(
      new TypeError(
        '[fetch-pacer] Unknown option `concurency` in createPacer(): did you mean `concurrency`?',
      ),
    );
  });

  it('names the nearest field of a policy, from perSecond and from a plain object', () => {
    expect(() => perSecond(10, loose({ brust: 20 }))).toThrow(
      /`brust` in a policy: did you mean `burst`\?/,
    );
    expect(() => resolvePolicy(loose({ limit: 1, windowMS: 1000 }))).toThrow(
      /`windowMS` in a policy: did you mean `windowMs`\?/,
    );
  });

  it('names the nearest option of createPacedFetch, its retry and its learn options', () => {
    const limits = perSecond(5);
    expect(() => createPacedFetch(loose({ limits, retries: 3 }))).toThrow(
      /`retries` in createPacedFetch\(\): did you mean `retry`\?/,
    );
    expect(() => createPacedFetch(loose({ limits, retry: { limits: 3 } }))).toThrow(
      /`limits` in `retry`: did you mean `limit`\?/,
    );
    expect(() => createPacedFetch(loose({ limits, learn: { prob: true } }))).toThrow(
      /`prob` in `learn`: did you mean `probe`\?/,
    );
  });

  it('lists the known options when no known name is near', () => {
    expect(() => createRateLimiter(loose({ limits: perSecond(1), somethingElse: 1 }))).toThrow(
      /Unknown option `somethingElse` in createRateLimiter\(\); known: `limits`, `maxKeys`, `clock`/,
    );
  });

  it('checks the options of the outbox, the stores and the manual clock', () => {
    const fetch = async () => new Response(null);
    expect(() => createOutbox(loose({ name: 'o', fetch, maxAttemps: 3 }))).toThrow(
      /`maxAttemps` in createOutbox\(\): did you mean `maxAttempts`\?/,
    );
    expect(() => redisStore(loose({ client: {}, prefx: 'x' }))).toThrow(
      /`prefx` in redisStore\(\): did you mean `prefix`\?/,
    );
    expect(() => crossTabStore(loose({ name: 'n', platfrom: {} }))).toThrow(
      /`platfrom` in crossTabStore\(\): did you mean `platform`\?/,
    );
    expect(() => createManualClock(loose({ stat: 5 }))).toThrow(/did you mean `start`\?/);
  });

  it('bounds the name it echoes and the work it does for a hostile one', () => {
    const name = 'x'.repeat(100_000);
    expect(() => createPacer(loose({ limits: perSecond(1), [name]: 1 }))).toThrow(
      new RegExp(`Unknown option \`${'x'.repeat(64)}\` in createPacer\\(\\); known:`),
    );
  });
});

describe('option types, checked at construction', () => {
  const limits = perSecond(5);

  it('rejects a readRateLimitHeaders that is not a boolean', () => {
    expect(() => createPacedFetch(loose({ limits, readRateLimitHeaders: 'yes' }))).toThrow(
      new TypeError(
        "[fetch-pacer] Expected `readRateLimitHeaders` to be a boolean, got `'yes'` (string)",
      ),
    );
  });

  it('rejects a pacer that is not one, and retry as an array', () => {
    expect(() => createPacedFetch(loose({ pacer: {} }))).toThrow(
      /Expected `pacer` to be a pacer made by `createPacer\(\)`, got a value of type object/,
    );
    expect(() => createPacedFetch(loose({ limits, retry: [] }))).toThrow(
      /Expected `retry` to be an object `\{ limit, \.\.\. \}` or false, got an array/,
    );
  });

  it('throws for queue options next to a shared pacer instead of ignoring them', () => {
    const pacer = createPacer({ limits });
    for (const name of ['mode', 'maxQueue', 'maxWaitMs', 'concurrency', 'maxKeys', 'clock']) {
      expect(() => createPacedFetch(loose({ pacer, [name]: 1 }))).toThrow(
        new RegExp(`\`${name}\` cannot apply next to a shared \`pacer\``),
      );
    }
    // The options of the paced fetch itself are fine next to a shared pacer.
    expect(() =>
      createPacedFetch({ pacer, retry: false, readRateLimitHeaders: false }),
    ).not.toThrow();
  });
});
