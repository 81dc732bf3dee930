// BullMQ's queue and timers on a Redis Cluster: the contract suites against a private 3-master cluster started for
// this file. The adapters give BullMQ a hash-tagged prefix there, so each queue's multi-key scripts stay in one slot.

import { randomBytes } from 'node:crypto';

import { PrivateRedisCluster } from '@canopy/testing';
import { Cluster } from 'ioredis';

import { BullmqTimers } from './bullmq-timers';
import { BullmqTurnQueue } from './bullmq-turn-queue';
import { JOBS } from './job-catalog';
import { describeTimersContract } from './testing/timers.contract';
import { describeTurnQueueContract } from './testing/turn-queue.contract';

let cluster: PrivateRedisCluster;

beforeAll(async () => {
  cluster = await PrivateRedisCluster.start(3);
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
});

/** A cluster client as BullMQ needs it (no retry limit on its blocking commands). */
async function connect(): Promise<Cluster> {
  const connection = new Cluster(
    cluster.ports.map((port) => ({ host: '127.0.0.1', port })),
    { redisOptions: { maxRetriesPerRequest: null } },
  );
  connection.on('error', () => undefined); // the private cluster goes away at the end of the file
  await connection.ping();
  return connection;
}

describeTurnQueueContract(
  'BullMQ on a Redis Cluster',
  async () => {
    const connection = await connect();
    const queue = new BullmqTurnQueue({
      connection,
      prefix: `qtest${randomBytes(4).toString('hex')}`,
      concurrency: 4,
      lockDurationMs: 2_000,
    });
    return {
      queue,
      async cleanup() {
        await queue.close(2_000);
        await connection.quit();
      },
    };
  },
  { attempts: JOBS.run.attempts, runsInline: false },
  { describe, it, expect },
);

describeTimersContract(
  'BullMQ on a Redis Cluster',
  async () => {
    const connection = await connect();
    const timers = new BullmqTimers({ connection, prefix: `ttest${randomBytes(4).toString('hex')}` });
    return {
      timers,
      async cleanup() {
        await timers.close();
        await connection.quit();
      },
    };
  },
  { describe, it, expect },
);
