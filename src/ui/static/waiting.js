/**
 * Why a queued delivery waits and until when, in words, on the admin page and in the portal alike:
 * behind its endpoint's open circuit (until the next probe, or until someone presses Retry now),
 * behind the head of its ordering key, for its disabled endpoint, for its next retry, or — due
 * already — for its turn under the endpoint's rate or concurrency limit. And "Retry now": close an
 * endpoint's circuit by hand (POST /v1/endpoints/{id}/close-circuit, audited), so what waits
 * behind it is sent at once.
 */
import { actionButton, h } from './dom.js';
import { count, time } from './format.js';

const enc = encodeURIComponent;
const QUEUED = new Set(['pending', 'failed', 'in_flight']);
/**
 * A due delivery is normally claimed within a poll interval or two; one overdue by more than this
 * is waiting for something: the endpoint's limits when it has any, else a free dispatcher.
 */
const OVERDUE_MS = 5000;

const SHORT = {
  circuit_open: 'waits for its circuit',
  endpoint_disabled: 'endpoint disabled',
  behind_ordering_key: 'behind its ordering key',
};

/** A few words under a listed delivery's status when it is parked; null otherwise. */
export function waitingShort(d) {
  return d.parked && SHORT[d.parked] ? h('small', { class: 'reason' }, SHORT[d.parked]) : null;
}

const endpointLink = (id) => h('a', { href: `#/endpoints/${enc(id)}` }, id);

/** "at most 2 in flight, 5/s" from an endpoint's limits; null when it has none. */
function limitsText(endpoint) {
  const parts = [];
  if (endpoint?.max_in_flight) parts.push(`at most ${count(endpoint.max_in_flight)} in flight`);
  if (endpoint?.rate_limit_per_second) parts.push(`${endpoint.rate_limit_per_second}/s`);
  return parts.length ? parts.join(', ') : null;
}

/**
 * "next probe at T", or, once that time has passed, that the probe is out (half-open: one delivery
 * is sent to see whether the endpoint is back).
 */
export function probeText(nextProbeAt) {
  if (!nextProbeAt) return 'until someone closes it';
  if (Date.parse(nextProbeAt) <= Date.now()) return ['its probe is out since ', time(nextProbeAt)];
  return ['next probe at ', time(nextProbeAt)];
}

/**
 * The "Retry now" button for endpoint `endpointId`: closes its circuit, lets `done` refresh the
 * view, and reports how many waiting deliveries were sent, in the section `done` returns (the
 * refreshed view's) or else in the button's own form or section.
 */
export function retryNowButton(ctx, endpointId, done) {
  return actionButton(
    'Retry now',
    async (button) => {
      await ctx.run(async () => {
        const r = await ctx.api.post(`/v1/endpoints/${enc(endpointId)}/close-circuit`);
        const sent = `${count(r.released)} waiting deliver${r.released === 1 ? 'y' : 'ies'} sent now`;
        const what =
          r.previous_state === 'closed'
            ? `The circuit of ${endpointId} was already closed.`
            : `Circuit closed: ${sent}.`;
        button.dataset.done = '1';
        const near = (await done?.(r)) ?? button;
        ctx.notify(what, 'info', near.isConnected ? near : undefined);
      }, button);
    },
    { 'aria-label': `Retry now: close the circuit of ${endpointId}` },
  );
}

/**
 * Why the queued delivery `d` waits, until when, and what can be done, as a node for its page;
 * null once it is settled. `endpoint`: its endpoint (null when deleted or not visible).
 * `rerender` refreshes the page after Retry now.
 */
export function waitingReason(ctx, d, endpoint, rerender) {
  if (!QUEUED.has(d.status)) return null;
  const line = (reason, ...parts) => h('span', { class: 'waiting', dataset: { waiting: reason } }, ...parts);
  if (d.status === 'in_flight') return line('in_flight', 'Being sent right now.');
  if (d.parked === 'circuit_open') {
    const canRetry = endpoint?.enabled;
    return line(
      'circuit_open',
      "Waiting for the endpoint's circuit: ",
      probeText(d.next_probe_at),
      ' (',
      endpointLink(d.endpoint_id),
      ' failed too often in a row).',
      canRetry ? [' ', retryNowButton(ctx, d.endpoint_id, rerender)] : null,
    );
  }
  if (d.parked === 'endpoint_disabled') {
    return line(
      'endpoint_disabled',
      'Waiting: its endpoint ',
      endpointLink(d.endpoint_id),
      ' is disabled',
      endpoint?.disabled_reason ? ` (${endpoint.disabled_reason})` : '',
      '. It is sent once the endpoint is enabled again.',
    );
  }
  if (d.parked === 'behind_ordering_key') {
    const head = d.ordering_head_id
      ? h('a', { href: `#/deliveries/${enc(d.ordering_head_id)}` }, d.ordering_head_id)
      : 'the delivery ahead of it';
    return line(
      'behind_ordering_key',
      'Waiting behind ',
      head,
      `, the head of ordering key ${d.ordering_key}: it is sent once that one is delivered, dead-lettered or cancelled.`,
    );
  }
  if (!d.next_attempt_at) return line('queued', 'Queued.');
  const due = Date.parse(d.next_attempt_at);
  const what = d.status === 'failed' ? 'Next retry at ' : 'Due at ';
  if (due > Date.now() - OVERDUE_MS) return line('scheduled', what, time(d.next_attempt_at), '.');
  const limits = limitsText(endpoint);
  return limits
    ? line(
        'endpoint_limits',
        'Due since ',
        time(d.next_attempt_at),
        `: waiting its turn under the endpoint's limits (${limits}).`,
      )
    : line('dispatcher', 'Due since ', time(d.next_attempt_at), ': waiting for a dispatcher to take it.');
}

/**
 * The circuit on an endpoint's page: whether deliveries wait behind it, until when, and "Retry
 * now" when closing it would send them (a disabled endpoint is enabled instead: that closes it too).
 * Null while the circuit is closed and nothing waits.
 */
export function circuitBlock(ctx, e, health, rerender) {
  const waiting = health.parked_count ?? 0;
  const many = waiting >= 10_000 ? '10,000 or more' : count(waiting);
  const behind = `${many} deliver${waiting === 1 ? 'y waits' : 'ies wait'}`;
  if (!e.enabled) {
    if (waiting === 0) return null;
    return h(
      'p',
      { class: 'waiting', dataset: { waiting: 'endpoint_disabled' } },
      `${behind} for this endpoint to be enabled; enabling it also closes its circuit.`,
    );
  }
  if (health.state === 'closed') return null;
  return h(
    'div',
    { class: 'circuit', dataset: { waiting: 'circuit_open' } },
    h(
      'p',
      { class: 'waiting' },
      `${behind} behind the ${health.state.replace('_', '-')} circuit: `,
      probeText(health.next_probe_at),
      '.',
    ),
    h(
      'p',
      {},
      'If the partner is back, Retry now closes the circuit and sends them at once; if it still fails, the circuit opens again.',
    ),
    h('p', { class: 'actions' }, retryNowButton(ctx, e.id, rerender)),
  );
}

/**
 * The circuits a bulk replay ran into (its answer's `open_circuits`), as they are now: each one's
 * health is read again, and those closed meanwhile are left out. Resolves to a note for the
 * replay's result ("— they wait for the endpoint's circuit (next probe at T)" and Retry now), or
 * null when none is open any more. `whose`: 'will' for a preview, 'do' once queued. `done` runs
 * after a Retry now.
 */
export async function circuitsNote(ctx, circuits, { whose = 'do', done } = {}) {
  const fresh = await Promise.all(
    (circuits ?? []).map((c) => ctx.api.get(`/v1/endpoints/${enc(c.endpoint_id)}/health`).catch(() => null)),
  );
  const open = fresh.filter((hl) => hl && hl.state !== 'closed');
  if (open.length === 0) return null;
  const verb = whose === 'will' ? 'will wait' : 'wait';
  const buttons = open.map((hl) => retryNowButton(ctx, hl.endpoint_id, done));
  const text =
    open.length === 1
      ? [
          ` — they ${verb} for the circuit of `,
          endpointLink(open[0].endpoint_id),
          ' (',
          probeText(open[0].next_probe_at),
          ').',
        ]
      : [
          ` — those to these endpoints ${verb} for their circuits: `,
          open.map((hl, i) => [
            i ? ', ' : '',
            endpointLink(hl.endpoint_id),
            ' (',
            probeText(hl.next_probe_at),
            ')',
          ]),
          '.',
        ];
  return h('span', { class: 'waiting', dataset: { waiting: 'circuit_open' } }, text, ' ', buttons);
}
