// Files (POST /v1/files and the routes under it): the query of the listing, the signed URL's request and the views.

import { z } from 'zod';

export const listFilesQuerySchema = z
  .object({
    limit: z.coerce.number().int().min(1).max(1_000).default(100),
    /** The `nextCursor` of the previous page. */
    cursor: z.string().min(1).max(500).optional(),
  })
  .strict();

/** POST /v1/files: the name of a raw upload (a multipart upload names its file itself). */
export const uploadFileQuerySchema = z.object({ name: z.string().min(1).max(255).optional() }).strict();

/** POST /v1/files/:fileId/url: how long the signed URL lives (default FILES_SIGNED_URL_TTL_SECONDS). */
export const fileUrlSchema = z
  .object({ ttlSeconds: z.number().int().min(10).max(86_400).optional() })
  .strict();

/** GET /v1/files/:fileId/signed: what a signed URL carries. */
export const signedFileQuerySchema = z
  .object({
    expires: z.coerce.number().int().min(0).max(99_999_999_999),
    signature: z.string().min(1).max(200),
  })
  .loose();

export interface FileView {
  id: string;
  name: string;
  mediaType: string;
  bytes: number;
  /** Hex. */
  sha256: string;
  /** The end user who uploaded it (null: the tenant's key). */
  userId: string | null;
  createdAt: string;
}

export interface FileUrlView {
  /** A path on this service: GET it with no credential until expiresAt. */
  url: string;
  expiresAt: string;
}
