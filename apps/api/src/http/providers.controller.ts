// A tenant's own provider keys (bring your own key; a tenant API key): PUT stores one (AES-256-GCM at rest), GET
// shows what is configured (base URL, models, the key's last four characters: never the key), DELETE removes it.
// The tenant's runs on that provider then use its key before the deployment's; GET /v1/models lists its models.
// A base URL that is or resolves to a loopback, private, link-local or reserved address is refused (400 on
// `baseUrl`) unless the operator allows it (ALLOW_PRIVATE_TARGETS); every call to it is checked again.

import { Body, Controller, Delete, Get, HttpCode, Param, Put } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CanopyException } from '@canopy/common';
import { PROVIDERS, type ProviderName, type Scope } from '@canopy/core';
import { Access, CurrentScope } from '@canopy/auth';
import { ProviderKeysService } from '@canopy/tenancy';
import { PutProviderDto } from './dto';

@ApiTags('providers')
@ApiBearerAuth()
@Access('tenant')
@Controller('v1/providers')
export class ProvidersController {
  constructor(private readonly keys: ProviderKeysService) {}

  @Get()
  @ApiOperation({ summary: 'The providers the tenant brought its own key for (never the keys)' })
  async list(@CurrentScope() scope: Scope) {
    return { data: await this.keys.list(scope) };
  }

  @Put(':provider')
  @ApiOperation({
    summary:
      'Store the tenant’s own key for a provider (anthropic, openai, openai-compatible): {apiKey, baseUrl? (required for openai-compatible), models?}. Encrypted at rest, never returned; the tenant’s runs use it before the deployment’s. 400 on a baseUrl that is or resolves to a loopback, private, link-local or reserved address the operator does not allow (ALLOW_PRIVATE_TARGETS); 503 when the deployment has no CANOPY_ENCRYPTION_KEY',
  })
  put(@CurrentScope() scope: Scope, @Param('provider') provider: string, @Body() body: PutProviderDto) {
    return this.keys.put(scope, providerOf(provider), body);
  }

  @Get(':provider')
  @ApiOperation({
    summary: 'The tenant’s key for a provider as configured: base URL, models, last four characters',
  })
  get(@CurrentScope() scope: Scope, @Param('provider') provider: string) {
    return this.keys.get(scope, providerOf(provider));
  }

  @Delete(':provider')
  @HttpCode(204)
  @ApiOperation({ summary: 'Remove the tenant’s key for a provider (its runs use the deployment’s again)' })
  async delete(@CurrentScope() scope: Scope, @Param('provider') provider: string): Promise<void> {
    await this.keys.delete(scope, providerOf(provider));
  }
}

function providerOf(name: string): ProviderName {
  if (!(PROVIDERS as readonly string[]).includes(name)) throw CanopyException.notFound('provider');
  return name as ProviderName;
}
