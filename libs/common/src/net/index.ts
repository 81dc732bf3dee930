// Outbound connections to URLs a tenant gives: the policy of where they may lead and the guard that holds it.

export * from './target-guard';
export * from './target-policy';
