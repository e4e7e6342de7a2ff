// The sender a Node user would build from graphile-worker + undici: one job per delivery, signed
// (Standard Webhooks v1), POSTed with undici, failed jobs retried by graphile-worker.
import { createHmac } from 'node:crypto';
import { Logger, run } from 'graphile-worker';

// A line per job on stdout would cost more than the job; a production sender logs failures only.
const logger = new Logger(() => (level, message) => {
  if (level === 'error') console.error(message);
});

import { Agent } from 'undici';

const agent = new Agent({ connections: 256, keepAliveTimeout: 30_000 });
const secret = Buffer.from(process.env.GW_SECRET, 'base64');
const runner = await run({
  noHandleSignals: true,
  preset: {
    worker: {
      connectionString: process.env.GW_DATABASE_URL,
      concurrentJobs: 100,
      localQueue: { size: 500 },
      completeJobBatchDelay: 1,
      failJobBatchDelay: 1,
      pollInterval: 1000,
      maxPoolSize: 110,
      logger,
    },
  },
  taskList: {
    async deliver(job) {
      const body = Buffer.from(job.body);
      const timestamp = Math.floor(Date.now() / 1000);
      const signature = createHmac('sha256', secret)
        .update(`${job.id}.${timestamp}.`)
        .update(body)
        .digest('base64');
      const res = await agent.request({
        origin: job.origin,
        path: job.path,
        method: 'POST',
        body,
        headers: {
          'content-type': 'application/json',
          'webhook-id': job.id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': `v1,${signature}`,
        },
        headersTimeout: 10_000,
        bodyTimeout: 10_000,
      });
      await res.body.text();
      if (res.statusCode < 200 || res.statusCode >= 300) throw new Error(`HTTP ${res.statusCode}`);
    },
  },
});
process.send('ready');
process.on('message', async (m) => {
  if (m === 'stop') {
    await runner.stop();
    await agent.close();
    process.exit(0);
  }
});
