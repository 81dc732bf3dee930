-- A tenant's consent to its end users' ids on the spans of its runs (OpenTelemetry's enduser.id), which the
-- operator records only where the tenant allows it (PUT /v1/settings {telemetryUserId: true}). NULL: not allowed.

ALTER TABLE public.tenant_settings ADD COLUMN telemetry_user_id boolean;
