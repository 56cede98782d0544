import type { PacerMode } from 'fetch-pacer';
import { useId } from 'react';
import {
  ALGORITHMS,
  algorithmNamed,
  hasBurst,
  type Settings,
  serverConfigOf,
} from '../client/settings';

const UNBOUNDED = 11;

function Slider({
  label,
  value,
  min,
  max,
  display,
  disabled,
  onChange,
}: {
  label: string;
  value: number;
  min: number;
  max: number;
  display: string;
  disabled?: boolean;
  onChange: (value: number) => void;
}) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>
        {label} <output htmlFor={id}>{display}</output>
      </label>
      <input
        id={id}
        type="range"
        min={min}
        max={max}
        value={value}
        disabled={disabled}
        onChange={(event) => onChange(Number(event.currentTarget.value))}
      />
    </div>
  );
}

/** The client's policy and the server's strictness. */
export function Controls({
  settings,
  onChange,
}: {
  settings: Settings;
  onChange: (next: Settings) => void;
}) {
  const set = (patch: Partial<Settings>) => onChange({ ...settings, ...patch });
  const burstable = hasBurst(settings.algorithm);
  const server = serverConfigOf(settings).limits;
  const concurrency = Number.isFinite(settings.concurrency) ? settings.concurrency : UNBOUNDED;
  const algorithmId = useId();
  return (
    <form
      className="card controls"
      aria-label="Pacer settings"
      onSubmit={(e) => e.preventDefault()}
    >
      <h3>Client policy</h3>
      <Slider
        label="Rate"
        value={settings.rate}
        min={1}
        max={30}
        display={`${settings.rate} / s`}
        onChange={(rate) => set({ rate })}
      />
      <Slider
        label="Burst"
        value={burstable ? settings.burst : settings.rate}
        min={1}
        max={30}
        disabled={!burstable}
        display={burstable ? String(settings.burst) : '= rate'}
        onChange={(burst) => set({ burst })}
      />
      <div className="field">
        <label htmlFor={algorithmId}>Algorithm</label>
        <select
          id={algorithmId}
          value={settings.algorithm.name}
          onChange={(event) => set({ algorithm: algorithmNamed(event.currentTarget.value) })}
        >
          {ALGORITHMS.map(({ algorithm, label }) => (
            <option key={algorithm.name} value={algorithm.name}>
              {label}
            </option>
          ))}
        </select>
      </div>
      <fieldset className="field segmented">
        <legend>When out of permits</legend>
        {(['queue', 'reject'] as const satisfies readonly PacerMode[]).map((mode) => (
          <label key={mode} className={settings.mode === mode ? 'active' : ''}>
            <input
              type="radio"
              name="mode"
              value={mode}
              checked={settings.mode === mode}
              onChange={() => set({ mode })}
            />
            {mode === 'queue' ? 'Queue' : 'Reject'}
          </label>
        ))}
      </fieldset>
      <Slider
        label="Concurrency"
        value={concurrency}
        min={1}
        max={UNBOUNDED}
        display={concurrency === UNBOUNDED ? 'unbounded' : `${concurrency} at once`}
        onChange={(value) =>
          set({ concurrency: value === UNBOUNDED ? Number.POSITIVE_INFINITY : value })
        }
      />
      <h3>Server</h3>
      <label className="switch">
        <input
          type="checkbox"
          role="switch"
          aria-checked={settings.stricterServer}
          checked={settings.stricterServer}
          onChange={(event) => set({ stricterServer: event.currentTarget.checked })}
        />
        <span className="switch-track" aria-hidden="true" />
        Stricter than the client
      </label>
      <p className="hint">
        The server publishes <strong>{server.rate} / s</strong>
        {settings.counting === 'gcra' ? (
          <>
            , bursts of <strong>{server.burst}</strong>
          </>
        ) : null}
        .{' '}
        {settings.stricterServer
          ? 'Half of what the client was told: the pacer has to learn it from the answers.'
          : 'What the client was configured to; how it counts is picked above.'}
      </p>
    </form>
  );
}
