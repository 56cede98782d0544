/**
 * The browser types a public declaration names, written so that the published `.d.ts` compiles
 * without the DOM lib (a Node project with `lib: ["es2022"]`, `@types/node` and
 * `skipLibCheck: false`). Where the DOM lib is loaded each one is the platform's own type; where
 * it is not, a structural stand-in that the real object satisfies.
 */
type Scope = typeof globalThis;

/** `IDBFactory` (`globalThis.indexedDB`, or fake-indexeddb's). */
export type IDBFactoryLike = Scope extends { indexedDB: infer Factory }
  ? Factory
  : { open(name: string, version?: number): unknown };

/** `LockManager` (`navigator.locks`). */
export type LockManagerLike = Scope extends { navigator: { locks: infer Locks } }
  ? Locks
  : { request(name: string, ...rest: never[]): Promise<unknown> };
