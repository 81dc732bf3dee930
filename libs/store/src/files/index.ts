// Files: the storage port and its adapters, the files' rows, the service, the module.

export * from './file-storage.port';
export * from './postgres-file.storage';
export * from './s3-file.storage';
export * from './file-intake';
export * from './files.repository';
export * from './files.service';
export * from './files.module';
