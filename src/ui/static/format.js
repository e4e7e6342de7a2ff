/** Formatting for figures, times and states, shared by the pages. */

export function ms(value) {
  if (value === null || value === undefined) return '–';
  return value >= 1000 ? `${(value / 1000).toFixed(value >= 10000 ? 0 : 1)} s` : `${Math.round(value)} ms`;
}

export function count(value) {
  return value === null || value === undefined ? '–' : Number(value).toLocaleString('en');
}

/** "2026-12-01 15:04:05" in the browser's zone, with the ISO time as a tooltip. */
export function time(iso) {
  if (!iso) return '–';
  const d = new Date(iso);
  const pad = (n) => String(n).padStart(2, '0');
  const text = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  const el = document.createElement('time');
  el.dateTime = iso;
  el.title = iso;
  el.textContent = text;
  return el;
}

export function seconds(value) {
  if (value === null || value === undefined) return '–';
  if (value < 60) return `${Math.round(value * 10) / 10} s`;
  if (value < 3600) return `${Math.round(value / 60)} min`;
  return `${Math.round(value / 360) / 10} h`;
}

/** A small badge whose class names the state, e.g. "badge state-dead_letter". */
export function badge(state) {
  const el = document.createElement('span');
  el.className = `badge state-${String(state).replace(/[^a-z_]/gi, '')}`;
  el.textContent = String(state).replace(/_/g, ' ');
  return el;
}
