// The port the tenants feature needs from the layer that authenticates and holds the open connections (the api):
// word that a credential changed, once the change is committed, so every process forgets its cached lookups and
// closes what no longer authenticates. Declared here and implemented above (CredentialWatch), so imports point
// down only.

export interface CredentialChanges {
  /** A key was revoked: it and the user tokens it minted stop working, in every process. */
  keyRevoked(tenantId: string, keyId: string): Promise<void>;
  /** A tenant was disabled (its connections are closed) or enabled again, in every process. */
  tenantChanged(tenantId: string, disabled: boolean): Promise<void>;
}

export const CREDENTIAL_CHANGES = Symbol('CREDENTIAL_CHANGES');
