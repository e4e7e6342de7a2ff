-- Fan-outs that reached no endpoint (no endpoint of the tenant subscribes to the event type): one
-- row per enqueue request and (tenant, event type), written by the API just after the enqueue
-- commits, so the enqueue statement itself is unchanged. GET /v1/pipeline sums the last hour;
-- each write also removes rows older than 25 hours, so the table holds about a day of them.
CREATE TABLE unrouted_counts (
  at         timestamptz NOT NULL DEFAULT now(),
  tenant_id  text NOT NULL,
  event_type text NOT NULL,
  messages   int NOT NULL CHECK (messages > 0)
);
CREATE INDEX unrouted_counts_at_idx ON unrouted_counts (at);
