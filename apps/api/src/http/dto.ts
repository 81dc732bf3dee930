// Request DTOs: the shared zod schemas of libs/core, as classes Nest validates (ZodValidationPipe) and
// documents (OpenAPI) from the same definition. Response DTOs only document (the answers are built from the
// core's types, which their schemas mirror).

import { createZodDto } from 'nestjs-zod';
import {
  acceptedSchema,
  branchSchema,
  contextQuerySchema,
  contextViewSchema,
  bulkExportQuerySchema,
  bulkImportQuerySchema,
  bulkTargetSchema,
  countQuerySchema,
  exportQuerySchema,
  forkSchema,
  importSchema,
  searchQuerySchema,
  updateTenantSchema,
  createKeySchema,
  createSessionSchema,
  createTenantSchema,
  createTokenSchema,
  eventsQuerySchema,
  jsonResultSchema,
  openedSessionSchema,
  runViewSchema,
  sessionDetailSchema,
  turnResultSchema,
  listSessionsQuerySchema,
  listTenantsQuerySchema,
  navigateSchema,
  openSessionSchema,
  promptSchema,
  resumeSchema,
  statsQuerySchema,
  updateSessionSchema,
  auditQuerySchema,
  createWebhookSchema,
  updateWebhookSchema,
  listDeliveriesQuerySchema,
  usageQuerySchema,
  putQuotasSchema,
  putProviderSchema,
  createMcpServerSchema,
  updateMcpServerSchema,
  putMcpCredentialsSchema,
  tenantSettingsSchema,
  tenantSettingsViewSchema,
} from '@canopy/core';

export class CreateTenantDto extends createZodDto(createTenantSchema) {}
export class CreateKeyDto extends createZodDto(createKeySchema) {}
export class CreateTokenDto extends createZodDto(createTokenSchema) {}
export class CreateSessionDto extends createZodDto(createSessionSchema) {}
export class UpdateSessionDto extends createZodDto(updateSessionSchema) {}
export class ListSessionsQueryDto extends createZodDto(listSessionsQuerySchema) {}
export class PromptDto extends createZodDto(promptSchema) {}
export class BranchDto extends createZodDto(branchSchema) {}
export class NavigateDto extends createZodDto(navigateSchema) {}
export class OpenSessionDto extends createZodDto(openSessionSchema) {}
export class ResumeDto extends createZodDto(resumeSchema) {}
export class EventsQueryDto extends createZodDto(eventsQuerySchema) {}
export class StatsQueryDto extends createZodDto(statsQuerySchema) {}

export class AcceptedDto extends createZodDto(acceptedSchema) {}
export class TurnResultDto extends createZodDto(turnResultSchema) {}
export class JsonResultDto extends createZodDto(jsonResultSchema) {}
export class RunViewDto extends createZodDto(runViewSchema) {}
export class ContextQueryDto extends createZodDto(contextQuerySchema) {}
export class ContextViewDto extends createZodDto(contextViewSchema) {}
export class OpenedSessionDto extends createZodDto(openedSessionSchema) {}
export class SessionDetailDto extends createZodDto(sessionDetailSchema) {}
export class SearchQueryDto extends createZodDto(searchQuerySchema) {}
export class CountQueryDto extends createZodDto(countQuerySchema) {}
export class ForkDto extends createZodDto(forkSchema) {}
export class ExportQueryDto extends createZodDto(exportQuerySchema) {}
export class ImportDto extends createZodDto(importSchema) {}
export class BulkExportQueryDto extends createZodDto(bulkExportQuerySchema) {}
export class BulkImportQueryDto extends createZodDto(bulkImportQuerySchema) {}
export class BulkTargetDto extends createZodDto(bulkTargetSchema) {}
export class UpdateTenantDto extends createZodDto(updateTenantSchema) {}
export class ListTenantsQueryDto extends createZodDto(listTenantsQuerySchema) {}
export class AuditQueryDto extends createZodDto(auditQuerySchema) {}
export class CreateWebhookDto extends createZodDto(createWebhookSchema) {}
export class UpdateWebhookDto extends createZodDto(updateWebhookSchema) {}
export class ListDeliveriesQueryDto extends createZodDto(listDeliveriesQuerySchema) {}
export class UsageQueryDto extends createZodDto(usageQuerySchema) {}
export class PutQuotasDto extends createZodDto(putQuotasSchema) {}
export class PutProviderDto extends createZodDto(putProviderSchema) {}
export class CreateMcpServerDto extends createZodDto(createMcpServerSchema) {}
export class UpdateMcpServerDto extends createZodDto(updateMcpServerSchema) {}
export class PutMcpCredentialsDto extends createZodDto(putMcpCredentialsSchema) {}
export class PutTenantSettingsDto extends createZodDto(tenantSettingsSchema) {}
export class TenantSettingsViewDto extends createZodDto(tenantSettingsViewSchema) {}
