import { format } from 'node:util';
import { HttpResponse, http } from 'msw';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { server } from '../support/msw.js';
import { allBlocks, expectedLogs, runnableFile, typeCheck } from './code-blocks.js';

const blocks = allBlocks();

describe('the code blocks of the README and docs/', () => {
  it('finds blocks on every page, some of them runnable', () => {
    const pages = new Set(blocks.map((block) => block.page));
    expect(pages.size).toBeGreaterThanOrEqual(8);
    expect(blocks.filter((block) => block.run).length).toBeGreaterThanOrEqual(4);
  });

  it('type-checks every ts, tsx and js block against the package types', () => {
    expect(typeCheck(blocks)).toEqual([]);
  }, 120_000);
});

// What the runnable blocks call: JSONPlaceholder's /todos/:id, as its guide documents it
// (https://jsonplaceholder.typicode.com/guide/: `{ userId, id, title, completed }`).
function todos() {
  return http.get('https://jsonplaceholder.typicode.com/todos/:id', ({ params }) => {
    const id = Number(params['id']);
    const title = id === 1 ? 'delectus aut autem' : `todo ${id}`; // the guide's /todos/1
    return HttpResponse.json({ userId: 1, id, title, completed: false });
  });
}

describe.each(blocks.map((block, index) => ({ block, index })).filter(({ block }) => block.run))(
  'the runnable block at $block.where',
  ({ block, index }) => {
    afterEach(() => {
      vi.useRealTimers();
      vi.restoreAllMocks();
    });

    it('runs to the end on fake time and prints what its comments say', async () => {
      server.use(todos());
      const logs: string[] = [];
      vi.spyOn(console, 'log').mockImplementation((...values) => logs.push(format(...values)));
      const module = (await import(runnableFile(block, index))) as { run(): Promise<void> };
      vi.useFakeTimers({
        toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate', 'performance'],
      });
      let settled: { error?: unknown } | undefined;
      module.run().then(
        () => (settled = {}),
        (error: unknown) => (settled = { error }),
      );
      // Bounded: 10 minutes of fake time in 50 ms steps, no real waiting.
      for (let step = 0; step < 12_000 && settled === undefined; step++) {
        await vi.advanceTimersByTimeAsync(50);
      }
      expect(settled).toEqual({});
      // The logs carry the pacing: a block's elapsed time on fake time is exact.
      expect(logs).toEqual(expectedLogs(block));
    });
  },
);
