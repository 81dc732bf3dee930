// Share links, feedback and the per-model figures for the api: their repositories over the database and their
// services over the session engine (reading trees) and the catalog (forking a shared path).

import { Module } from '@nestjs/common';
import { Database, StoreModule } from '@canopy/store';
import { SessionService } from '@canopy/session';
import { SessionCatalogService } from '../catalog';
import { ManagerModule } from '../manager.module';
import { FeedbackRepository } from './feedback.repository';
import { FeedbackService } from './feedback.service';
import { ModelStatsRepository } from './model-stats.repository';
import { ModelStatsService } from './model-stats.service';
import { SharesRepository } from './shares.repository';
import { SharesService } from './shares.service';

@Module({
  imports: [StoreModule.forRoot(), ManagerModule.forRoot('api')],
  providers: [
    { provide: SharesRepository, inject: [Database], useFactory: (db: Database) => new SharesRepository(db) },
    {
      provide: FeedbackRepository,
      inject: [Database],
      useFactory: (db: Database) => new FeedbackRepository(db),
    },
    {
      provide: SharesService,
      inject: [SessionService, SharesRepository, SessionCatalogService],
      useFactory: (sessions: SessionService, shares: SharesRepository, catalog: SessionCatalogService) =>
        new SharesService(sessions, shares, catalog),
    },
    {
      provide: FeedbackService,
      inject: [SessionService, FeedbackRepository],
      useFactory: (sessions: SessionService, feedback: FeedbackRepository) =>
        new FeedbackService(sessions, feedback),
    },
    {
      provide: ModelStatsService,
      inject: [Database],
      useFactory: (db: Database) => new ModelStatsService(new ModelStatsRepository(db)),
    },
  ],
  exports: [SharesService, FeedbackService, ModelStatsService],
})
export class SharingModule {}
