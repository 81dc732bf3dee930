export declare function serviceProcess(options: { embedded: boolean }): {
  args: string[];
  env: Record<string, string>;
};
