// Feedback on replies: a rater's rating of an assistant node (put, changed, removed), and the ratings with the turns
// they rate, as pages or as an NDJSON stream for evaluation sets.

import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Param,
  ParseIntPipe,
  Put,
  Query,
  Res,
} from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { createZodDto } from 'nestjs-zod';
import {
  deleteFeedbackQuerySchema,
  feedbackExportQuerySchema,
  feedbackQuerySchema,
  putFeedbackSchema,
  type FeedbackView,
  type Scope,
} from '@canopy/core';
import { CanopyException } from '@canopy/common';
import { CurrentScope } from '@canopy/auth';
import { FeedbackService } from '@canopy/manager';
import { NDJSON, streamNdjson } from './ndjson';

class PutFeedbackDto extends createZodDto(putFeedbackSchema) {}
class DeleteFeedbackQueryDto extends createZodDto(deleteFeedbackQuerySchema) {}
class FeedbackQueryDto extends createZodDto(feedbackQuerySchema) {}
class FeedbackExportQueryDto extends createZodDto(feedbackExportQuerySchema) {}

const nodeIdPipe = new ParseIntPipe({
  exceptionFactory: () => CanopyException.badRequest('nodeId must be an integer', { field: 'nodeId' }),
});

@ApiTags('feedback')
@ApiBearerAuth()
@Controller('v1')
export class FeedbackController {
  constructor(private readonly feedback: FeedbackService) {}

  @Put('sessions/:id/nodes/:nodeId/feedback')
  @ApiOperation({
    summary:
      'Rate a reply (an assistant node) {rating: "up" | "down", comment?, tags?, userId? (a tenant key rating for one of its users)}: one rating per rater and reply, replaced by the next PUT; answers it with the turn it rates. Webhook feedback.created on the first',
  })
  async put(
    @CurrentScope() scope: Scope,
    @Param('id') id: string,
    @Param('nodeId', nodeIdPipe) nodeId: number,
    @Body() body: PutFeedbackDto,
  ): Promise<FeedbackView> {
    return (await this.feedback.put(scope, id, nodeId, body)).feedback;
  }

  @Delete('sessions/:id/nodes/:nodeId/feedback')
  @HttpCode(204)
  @ApiOperation({ summary: 'Remove the rater’s rating of a reply (a tenant key: ?userId= names the user’s)' })
  async delete(
    @CurrentScope() scope: Scope,
    @Param('id') id: string,
    @Param('nodeId', nodeIdPipe) nodeId: number,
    @Query() query: DeleteFeedbackQueryDto,
  ): Promise<void> {
    await this.feedback.delete(scope, id, nodeId, query.userId);
  }

  @Get('feedback')
  @ApiOperation({
    summary:
      'Ratings, newest first, each with the turn it rates (prompt, reply, model, usage); filter by from, to, model, rating, userId, sessionId. A user token reads its own',
  })
  list(@CurrentScope() scope: Scope, @Query() query: FeedbackQueryDto) {
    return this.feedback.list(scope, query);
  }

  @Get('feedback/export')
  @ApiProduces(NDJSON)
  @ApiOperation({
    summary: 'Every rating matching the filters of GET /v1/feedback as NDJSON, one per line, newest first',
  })
  async export(
    @CurrentScope() scope: Scope,
    @Query() query: FeedbackExportQueryDto,
    @Res() res: Response,
  ): Promise<void> {
    await streamNdjson(res, this.feedback.export(scope, query));
  }
}
