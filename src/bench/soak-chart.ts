/**
 * The soak's figures as a small self-contained SVG: database size and lag p99 over time, one
 * panel each, the end of the warm-up marked. Plain strings, no charting library; docs/soak.png is
 * a headless-browser screenshot of it (see docs/performance.md, "Soak").
 */

interface Point {
  t: number;
  dbBytes: number;
  lagP99Ms: number;
}

const W = 720;
const PANEL_H = 150;
const PAD = { left: 64, right: 16, top: 28, bottom: 24 };

function panel(
  points: [number, number][],
  y0: number,
  title: string,
  unit: string,
  tMax: number,
  warmup: number,
): string {
  const values = points.map((p) => p[1]).filter(Number.isFinite);
  const vMax = Math.max(1e-9, ...values) * 1.1;
  const x = (t: number) => PAD.left + (t / tMax) * (W - PAD.left - PAD.right);
  const y = (v: number) => y0 + PAD.top + (1 - v / vMax) * (PANEL_H - PAD.top - PAD.bottom);
  const line = points
    .filter((p) => Number.isFinite(p[1]))
    .map((p) => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`)
    .join(' ');
  const ticks = [0, 0.5, 1].map((f) => {
    const v = vMax * f;
    return `<text x="${PAD.left - 6}" y="${y(v) + 4}" text-anchor="end">${v < 10 ? v.toFixed(1) : v.toFixed(0)}</text>
<line x1="${PAD.left}" x2="${W - PAD.right}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`;
  });
  return `<text x="${PAD.left}" y="${y0 + 18}" font-weight="bold">${title} (${unit})</text>
${ticks.join('\n')}
<line x1="${x(warmup)}" x2="${x(warmup)}" y1="${y0 + PAD.top}" y2="${y0 + PANEL_H - PAD.bottom}" stroke="#999" stroke-dasharray="4 3"/>
<text x="${x(warmup) + 4}" y="${y0 + PAD.top + 10}" fill="#777">end of warm-up</text>
<polyline fill="none" stroke="#1f6feb" stroke-width="2" points="${line}"/>`;
}

/** The chart for the soak samples; `warmupSeconds` is marked with a dashed line. */
export function soakChartSvg(samples: Point[], warmupSeconds: number): string {
  const tMax = Math.max(1, ...samples.map((s) => s.t));
  const h = PANEL_H * 2 + 24;
  const axis = [0, 0.25, 0.5, 0.75, 1]
    .map((f) => {
      const t = tMax * f;
      const x = PAD.left + f * (W - PAD.left - PAD.right);
      return `<text x="${x}" y="${h - 6}" text-anchor="middle">${t.toFixed(0)} s</text>`;
    })
    .join('\n');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${h}" viewBox="0 0 ${W} ${h}" font-family="sans-serif" font-size="11">
<rect width="100%" height="100%" fill="#fff"/>
${panel(
  samples.map((s) => [s.t, s.dbBytes / 2 ** 20]),
  0,
  'Database size',
  'MiB',
  tMax,
  warmupSeconds,
)}
${panel(
  samples.map((s) => [s.t, s.lagP99Ms]),
  PANEL_H,
  'Delivery lag p99 per 10 s window',
  'ms',
  tMax,
  warmupSeconds,
)}
${axis}
</svg>
`;
}
