// Prometheus metrics (prom-client): HTTP latency by route, runs by final status, live sessions and subscribers,
// events published, database round trips, sessions expired by retention, the embedded database's restarts, plus
// the process's default metrics.

import { Inject, Injectable, Optional, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Unsubscribe } from '@canopy/realtime';
import { SessionManager } from '@canopy/manager';
import { SessionService } from '@canopy/session';
import { Database, EMBEDDED_DATABASE_SUPERVISOR, type EmbeddedDatabaseSupervisor } from '@canopy/store';
import { SseRegistry } from '../http/sse';
import { LiveGateway } from '../http/live.gateway';

@Injectable()
export class MetricsService implements OnModuleInit, OnModuleDestroy {
  readonly registry = new Registry();
  readonly httpDuration = new Histogram({
    name: 'canopy_http_request_duration_seconds',
    help: 'HTTP request latency by method, route and status',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly runs = new Counter({
    name: 'canopy_runs_total',
    help: 'Runs that ended, by final status',
    labelNames: ['status'],
    registers: [this.registry],
  });
  readonly events = new Counter({
    name: 'canopy_events_published_total',
    help: 'Session events published',
    registers: [this.registry],
  });
  readonly expired = new Counter({
    name: 'canopy_sessions_expired_total',
    help: 'Sessions deleted by their tenant’s retention policy (closed {reason: "expired"} on the activity feed)',
    registers: [this.registry],
  });
  private unsubscribe: Unsubscribe | null = null;
  private stopCountingEvents: (() => void) | null = null;

  constructor(
    private readonly sessions: SessionService,
    private readonly manager: SessionManager,
    database: Database,
    streams: SseRegistry,
    gateway: LiveGateway,
    @Optional() @Inject(EMBEDDED_DATABASE_SUPERVISOR) embedded: EmbeddedDatabaseSupervisor | null,
  ) {
    collectDefaultMetrics({ register: this.registry, prefix: 'canopy_' });
    if (embedded) {
      new Counter({
        name: 'canopy_db_embedded_restarts_total',
        help: 'Times the embedded database thread was restarted (it died or stopped answering) and served again',
        registers: [this.registry],
        collect() {
          this.reset();
          this.inc(embedded.restarts);
        },
      });
      new Gauge({
        name: 'canopy_db_embedded_up',
        help: 'Whether the embedded database serves (1) or is down, being restarted (0)',
        registers: [this.registry],
        collect() {
          this.set(embedded.state === 'up' ? 1 : 0);
        },
      });
    }
    new Counter({
      name: 'canopy_db_round_trips_total',
      help: 'Statements sent to the database by this process (each one round trip)',
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(database.roundTripsSent);
      },
    });
    new Counter({
      name: 'canopy_db_pool_checkouts_total',
      help: 'Connections taken from the database pool by the session store and other raw-SQL work',
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(database.poolStats.checkouts);
      },
    });
    new Counter({
      name: 'canopy_db_pool_wait_seconds_total',
      help: 'Time those checkouts waited for a free connection (every pooled connection busy: DATABASE_POOL_MAX)',
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(database.poolStats.waitSeconds);
      },
    });
    new Gauge({
      name: 'canopy_db_pool_waiting',
      help: 'Requests waiting for a pooled database connection now',
      registers: [this.registry],
      collect() {
        this.set(database.poolStats.waiting);
      },
    });
    new Counter({
      name: 'canopy_live_clients_cut_total',
      help: 'SSE streams and WebSocket connections cut off for not reading (reason slow_consumer), by transport',
      labelNames: ['transport'],
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc({ transport: 'sse' }, streams.slowConsumersCut);
        this.inc({ transport: 'websocket' }, gateway.slowConsumersCut);
      },
    });
    new Counter({
      name: 'canopy_ws_frames_rate_limited_total',
      help: 'WebSocket frames refused for the request budgets (rate_limited)',
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(gateway.framesRefused);
      },
    });
    const live = () => this.manager.liveHere();
    new Gauge({
      name: 'canopy_live_sessions',
      help: 'Live sessions served by this instance',
      registers: [this.registry],
      collect() {
        this.set(live().length);
      },
    });
    new Gauge({
      name: 'canopy_subscribers',
      help: 'Subscribers of live sessions on this instance, by mode',
      labelNames: ['mode'],
      registers: [this.registry],
      collect() {
        const sessions = live();
        this.set(
          { mode: 'controller' },
          sessions.reduce((n, s) => n + s.controllers, 0),
        );
        this.set(
          { mode: 'observer' },
          sessions.reduce((n, s) => n + s.observers, 0),
        );
      },
    });
  }

  async onModuleInit(): Promise<void> {
    this.stopCountingEvents = this.sessions.onEventsPublished((count) => this.events.inc(count));
    this.unsubscribe = await this.manager.followActivity(null, (event) => {
      if (event.type === 'run_finished') this.runs.inc({ status: event.data.status });
      else if (event.type === 'closed' && event.data.reason === 'expired') this.expired.inc();
    });
  }

  async onModuleDestroy(): Promise<void> {
    this.stopCountingEvents?.();
    await this.unsubscribe?.();
  }
}
