import type { Burst, LaneProgress } from '../client/bursts';
import type { Lane, LaneCounts } from '../mock/server';

/** One burst's outcome in a sentence per side, for the live region. */
export function summaryOf(
  burst: Burst,
  progress: Readonly<Record<Lane, LaneProgress>>,
  counts: Readonly<Record<Lane, LaneCounts>> | undefined,
): string {
  const side = (lane: Lane, name: string) => {
    const { outcomes, doneAt } = progress[lane];
    const refused = counts?.[lane].refused ?? 0;
    const time =
      doneAt === undefined ? '' : ` in ${((doneAt - burst.firedAt) / 1000).toFixed(1)} s`;
    return `${name}: ${outcomes.ok} of ${burst.size} succeeded${time}, the server answered ${refused} × 429.`;
  };
  return `Burst of ${burst.size} done. ${side('unpaced', 'Plain fetch')} ${side('paced', 'With fetch-pacer')}`;
}
