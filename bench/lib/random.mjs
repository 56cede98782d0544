// Seeded randomness for the bench: the same seed gives the same sequence, so a run's delays can
// be drawn again (mulberry32: 32 bits of state, enough for jitter, not for anything secret).

/** A function returning floats in [0, 1), the same sequence for the same `seed`. */
export function seededRandom(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** A draw in [min, max) from `random`. */
export function uniform(random, min, max) {
  return min + (max - min) * random();
}
