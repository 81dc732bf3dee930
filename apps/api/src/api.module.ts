// The api deployable: wiring only. Capabilities live in libs and are imported here: the manager layer in its 'api'
// role (it executes runs itself only when embedded), the store, Redis, realtime and agent modules the controllers
// use.

import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { ThrottlerModule } from '@nestjs/throttler';
import { ZodValidationPipe } from 'nestjs-zod';
import {
  AllExceptionsFilter,
  CANOPY_CONFIG,
  ConfigModule,
  LoggingModule,
  TelemetryModule,
  type CanopyConfig,
} from '@canopy/common';
import { AuthGuard, AuthModule } from '@canopy/auth';
import { AgentModule } from '@canopy/agent';
import { ManagerModule, SharingModule } from '@canopy/manager';
import { RealtimeModule } from '@canopy/realtime';
import { REDIS_CONNECTIONS, RedisModule, type RedisConnections } from '@canopy/redis';
import { FilesModule, StoreModule } from '@canopy/store';
import { resolveSecrets } from '@canopy/auth';
import { TenancyModule } from '@canopy/tenancy';
import { AgUiController } from './frontend/ag-ui.controller';
import { AgUiService } from './frontend/ag-ui.service';
import { FrontendChats } from './frontend/frontend-chats.service';
import { UiChatController } from './frontend/ui-chat.controller';
import { UiChatService } from './frontend/ui-chat.service';
import { UiMessageStream } from './frontend/ui-message-stream';
import { AdminController } from './http/admin.controller';
import { AuditController } from './http/audit.controller';
import { KeysController } from './http/keys.controller';
import { WebhooksController } from './http/webhooks.controller';
import { QuotasController } from './http/quotas.controller';
import { ProvidersController } from './http/providers.controller';
import { McpCredentialsController, McpServersController } from './http/mcp-servers.controller';
import { SettingsController } from './http/settings.controller';
import { CommandsController } from './http/commands.controller';
import { CredentialWatchModule } from './http/credential-watch.module';
import { LiveController, WebSocketDocController } from './http/live.controller';
import { ModelsController } from './http/models.controller';
import { LiveGateway } from './http/live.gateway';
import { StatsController } from './http/stats.controller';
import { RunsController } from './http/runs.controller';
import { SessionBulkController } from './http/session-bulk.controller';
import { SessionCommands } from './http/session-commands';
import { SessionSearchController } from './http/session-search.controller';
import { SessionTransferController } from './http/session-transfer.controller';
import { SessionsController } from './http/sessions.controller';
import { SseRegistry } from './http/sse';
import { StorableTextPipe } from './http/storable-text.pipe';
import { TokensController } from './http/tokens.controller';
import { TreeController } from './http/tree.controller';
import { FilesController } from './http/files.controller';
import { FileUrlSigner } from './http/file-urls';
import { SharesController } from './http/shares.controller';
import { FeedbackController } from './http/feedback.controller';
import { ModelStatsController } from './http/model-stats.controller';
import { CanopyMcpService } from './mcp/canopy-mcp.service';
import { McpEndpointController } from './mcp/mcp-endpoint.controller';
import { LiveHistory } from './ops/live-history.service';
import { MetricsService } from './ops/metrics.service';
import { OpsController } from './ops/ops.controller';
import { RateLimitGuard, rateLimitOptions } from './ops/rate-limit.guard';
import { ShutdownService } from './ops/shutdown.service';

@Module({})
export class ApiModule {
  static forRoot(config: CanopyConfig): DynamicModule {
    return {
      module: ApiModule,
      imports: [
        ConfigModule.forRoot(config),
        LoggingModule,
        TelemetryModule,
        StoreModule.forRoot(),
        FilesModule.forRoot(),
        RedisModule.forRoot(),
        RealtimeModule.forRoot(),
        AgentModule.forRoot(),
        ManagerModule.forRoot('api'),
        AuthModule,
        CredentialWatchModule,
        SharingModule,
        // The tenant-operations use cases, with the ports they need from above: the manager cancels a disabled
        // tenant's runs, the credential watch forgets and closes what a change ends.
        TenancyModule.forApi({ imports: [ManagerModule.forRoot('api'), CredentialWatchModule] }),
        ThrottlerModule.forRootAsync({
          imports: [RedisModule.forRoot()],
          inject: [CANOPY_CONFIG, REDIS_CONNECTIONS],
          useFactory: (c: CanopyConfig, redis: RedisConnections | null) => rateLimitOptions(c, redis),
        }),
      ],
      controllers: [
        OpsController,
        AdminController,
        KeysController,
        AuditController,
        WebhooksController,
        QuotasController,
        ProvidersController,
        McpServersController,
        McpCredentialsController,
        SettingsController,
        TokensController,
        // Before SessionsController: /v1/sessions/search and /count are not session ids.
        SessionSearchController,
        SessionBulkController,
        SessionTransferController,
        SessionsController,
        TreeController,
        CommandsController,
        RunsController,
        ModelStatsController,
        StatsController,
        ModelsController,
        FilesController,
        SharesController,
        FeedbackController,
        LiveController,
        WebSocketDocController,
        McpEndpointController,
        // The frontend protocols (the AI SDK's UI message stream, AG-UI): translations of the session events.
        UiChatController,
        AgUiController,
      ],
      providers: [
        { provide: APP_FILTER, useClass: AllExceptionsFilter },
        // Text no column can store is refused before the schemas (and their transforms) see it.
        { provide: APP_PIPE, useClass: StorableTextPipe },
        { provide: APP_PIPE, useClass: ZodValidationPipe },
        // Order matters: who is calling first, then how often.
        { provide: APP_GUARD, useClass: AuthGuard },
        { provide: APP_GUARD, useClass: RateLimitGuard },
        SseRegistry,
        SessionCommands,
        {
          // Signed file URLs: keyed by the secret user tokens are signed with (the same on every process).
          provide: FileUrlSigner,
          inject: [CANOPY_CONFIG],
          useFactory: (c: CanopyConfig) => new FileUrlSigner(resolveSecrets(c).jwtSecret),
        },
        CanopyMcpService,
        LiveGateway,
        MetricsService,
        ShutdownService,
        LiveHistory,
        FrontendChats,
        UiChatService,
        UiMessageStream,
        AgUiService,
      ],
    };
  }
}
