export {
  type CrossTabPlatform,
  type CrossTabStore,
  type CrossTabStoreOptions,
  crossTabStore,
} from './store.js';
