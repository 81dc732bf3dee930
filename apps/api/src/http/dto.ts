// Request DTOs: the shared zod schemas of libs/core, as classes Nest validates (ZodValidationPipe) and
// documents (OpenAPI) from the same definition.

import { createZodDto } from 'nestjs-zod';
import {
  branchSchema,
  createKeySchema,
  createSessionSchema,
  createTenantSchema,
  createTokenSchema,
  eventsQuerySchema,
  listSessionsQuerySchema,
  listTenantsQuerySchema,
  navigateSchema,
  promptSchema,
  resumeSchema,
  statsQuerySchema,
  updateSessionSchema,
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
export class ResumeDto extends createZodDto(resumeSchema) {}
export class EventsQueryDto extends createZodDto(eventsQuerySchema) {}
export class StatsQueryDto extends createZodDto(statsQuerySchema) {}
export class ListTenantsQueryDto extends createZodDto(listTenantsQuerySchema) {}
