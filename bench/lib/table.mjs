// Markdown tables: printed to the terminal and pasted as they are into bench/README.md.

/** A number with `digits` decimals and thousands separators; '-' for missing, NaN or null. */
export function num(value, digits = 0) {
  if (value === undefined || value === null || Number.isNaN(value)) return '-';
  if (!Number.isFinite(value)) return value > 0 ? 'inf' : '-inf';
  return value.toLocaleString('en-US', {
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  });
}

/** `value / base` as "1.23x"; '-' when either is missing or the base is 0. */
export function ratio(value, base, digits = 2) {
  if (typeof value !== 'number' || typeof base !== 'number' || !(base > 0)) return '-';
  if (!Number.isFinite(value)) return '-';
  return `${num(value / base, digits)}x`;
}

/**
 * Renders rows as a markdown table. `columns` is `[{ label, value: (row) => string, right? }]`;
 * numbers are right-aligned when `right` is true (the default for every column but the first).
 */
export function renderTable(columns, rows) {
  const cells = rows.map((row) => columns.map((column) => String(column.value(row))));
  const widths = columns.map((column, i) =>
    Math.max(column.label.length, 3, ...cells.map((line) => line[i].length)),
  );
  const right = columns.map((column, i) => column.right ?? i > 0);
  const pad = (text, i) => (right[i] ? text.padStart(widths[i]) : text.padEnd(widths[i]));
  const lines = [
    `| ${columns.map((column, i) => pad(column.label, i)).join(' | ')} |`,
    `| ${widths.map((w, i) => (right[i] ? `${'-'.repeat(w - 1)}:` : '-'.repeat(w))).join(' | ')} |`,
    ...cells.map((line) => `| ${line.map((text, i) => pad(text, i)).join(' | ')} |`),
  ];
  return lines.join('\n');
}

/** Prints a titled table (and notes under it) and returns the same text. */
export function printTable(title, columns, rows, notes = []) {
  const text = [
    `### ${title}`,
    '',
    renderTable(columns, rows),
    ...(notes.length > 0 ? ['', ...notes] : []),
  ].join('\n');
  console.log(`\n${text}\n`);
  return text;
}
