// The error codes of the public API (API.md) and the HTTP status each answers with: the service raises them,
// the SDK types its errors by them.

export const ERROR_STATUS = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  /** Every credential of a disabled tenant. */
  tenant_disabled: 403,
  not_found: 404,
  method_not_allowed: 405,
  already_exists: 409,
  /** Creating or renaming a tenant to a name another tenant has (names compare case-insensitively). */
  tenant_name_taken: 409,
  session_busy: 409,
  session_paused: 409,
  not_paused: 409,
  idle: 409,
  /** An attachment of a type the session's model cannot take (e.g. a PDF to a model without document input). */
  attachment_unsupported: 400,
  payload_too_large: 413,
  unsupported_media_type: 415,
  not_user_node: 422,
  not_assistant_node: 422,
  /** Editing after an assistant message with tool uses would leave them without results. */
  tool_use_node: 422,
  rate_limited: 429,
  /** A run over one of its tenant's or user's quotas (details: the limit, the usage, when it resets). */
  quota_exceeded: 429,
  /** The tenant has as many heavy operations (imports, bulk exports and deletes, forks) in flight as it may: retry later. */
  too_many_operations: 429,
  internal: 500,
  unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export function statusOf(code: ErrorCode): number {
  return ERROR_STATUS[code];
}

/** The code a bare HTTP status stands for, when something other than a CanopyException raised it. */
export function codeForStatus(status: number): ErrorCode {
  switch (status) {
    case 400:
      return 'bad_request';
    case 401:
      return 'unauthorized';
    case 403:
      return 'forbidden';
    case 404:
      return 'not_found';
    case 405:
      return 'method_not_allowed';
    case 409:
      return 'already_exists';
    case 413:
      return 'payload_too_large';
    case 415:
      return 'unsupported_media_type';
    case 422:
      return 'bad_request';
    case 429:
      return 'rate_limited';
    case 503:
      return 'unavailable';
    default:
      return status >= 500 ? 'internal' : 'bad_request';
  }
}
