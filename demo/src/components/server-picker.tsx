import { COUNTINGS, DIALECTS, type Settings, serverConfigOf } from '../client/settings';
import type { Counting, Dialect } from '../mock/server';
import { outlookOf } from './outlook';

function Choices<T extends string>({
  legend,
  name,
  options,
  value,
  onChange,
}: {
  legend: string;
  name: string;
  options: readonly { readonly value: T; readonly label: string }[];
  value: T;
  onChange: (value: T) => void;
}) {
  return (
    <fieldset className="chips">
      <legend>{legend}</legend>
      <div className="chip-row">
        {options.map((option) => (
          <label key={option.value} className={option.value === value ? 'chip active' : 'chip'}>
            <input
              type="radio"
              name={name}
              value={option.value}
              checked={option.value === value}
              onChange={() => onChange(option.value)}
            />
            {option.label}
          </label>
        ))}
      </div>
    </fieldset>
  );
}

/** How the mock server counts and what it says, and what that means for the pacer today. */
export function ServerPicker({
  settings,
  onChange,
}: {
  settings: Settings;
  onChange: (next: Settings) => void;
}) {
  const { limits } = serverConfigOf(settings);
  const outlook = outlookOf(settings.counting, settings.dialect);
  return (
    <form
      className="picker"
      aria-label="The mock server"
      onSubmit={(event) => event.preventDefault()}
    >
      <Choices<Counting>
        legend={`The server allows ${limits.rate} / s, counted as a`}
        name="counting"
        options={COUNTINGS}
        value={settings.counting}
        onChange={(counting) => onChange({ ...settings, counting })}
      />
      <Choices<Dialect>
        legend="and it tells the client"
        name="dialect"
        options={DIALECTS}
        value={settings.dialect}
        onChange={(dialect) => onChange({ ...settings, dialect })}
      />
      <p className={`outlook outlook-${outlook.tone}`} data-testid="outlook">
        <strong>{outlook.headline}</strong> <span className="outlook-detail">{outlook.detail}</span>
      </p>
    </form>
  );
}
