// The API's error codes live in @canopy/core, shared with the SDK.

export { ERROR_STATUS, codeForStatus, statusOf, type ErrorCode } from '@canopy/core';
