// Types of random.mjs, so the TypeScript test support draws the same seeded sequences.
export function seededRandom(seed: number): () => number;
export function uniform(random: () => number, min: number, max: number): number;
