export {
  createManualClock,
  ManualClock,
  type ManualClockOptions,
  type ManualTimer,
} from './manual-clock.js';
