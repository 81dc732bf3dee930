export declare const SERVICE_NODE_ARGS: readonly string[];
export declare const SERVICE_ENV: Readonly<Record<string, string>>;
