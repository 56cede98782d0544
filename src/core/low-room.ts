/**
 * The least room to capacity a bucket had since a given time, for the give-back of a reserve
 * (`Units.adjust`, a store's `adjust`): a bucket that filled up since the reserve was charged
 * has absorbed its over-charge (its refill was capped), as the server's did, and crediting it
 * again would put the limiter ahead of the server.
 *
 * Between charges a bucket only fills, so over any span its least room is just before one of
 * its charges, or now: each charge notes it (`noteRoom`). Kept flat, `[time, room, time, room,
 * ...]` with both rising (a later, lower room hides every earlier one), so that a store keeps it
 * as it is. Past `LOW_ROOMS` notes the two neighbours closest in room merge into the later time
 * with the lower room, which can only credit less, and by no more than their difference.
 * (Merging the two oldest instead walked the room of a full bucket forward through a drain,
 * every charge of which notes a higher room than the last: the give-back of a reserve taken
 * early in it was voided whole.)
 */
export const LOW_ROOMS = 16;

/** Notes that the bucket had `room` to its capacity at `at`, before a charge. */
export function noteRoom(notes: number[], at: number, room: number): void {
  while (notes.length > 0 && (notes[notes.length - 1] as number) >= room) notes.length -= 2;
  notes.push(at, room);
  if (notes.length > 2 * LOW_ROOMS) {
    const gap = (i: number) => (notes[i + 3] as number) - (notes[i + 1] as number);
    let closest = 0;
    for (let i = 2; i < notes.length - 2; i += 2) if (gap(i) < gap(closest)) closest = i;
    notes[closest + 3] = notes[closest + 1] as number;
    notes.splice(closest, 2);
  }
}

/** The least room noted after `at` (a charge at `at` itself came before what it reserved). */
export function roomSince(notes: readonly number[], at: number): number {
  for (let i = 0; i < notes.length; i += 2) {
    if ((notes[i] as number) > at) return notes[i + 1] as number;
  }
  return Number.POSITIVE_INFINITY;
}
