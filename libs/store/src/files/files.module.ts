// The files of a deployable: the storage FILES_STORAGE names (Postgres by default, an S3-compatible object store for
// a distributed deployment), the files' rows, and the service over both. FilesModule.forRoot() is one module per
// process however many import it.

import {
  Inject,
  Injectable,
  Logger,
  Module,
  type DynamicModule,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { CANOPY_CONFIG, type CanopyConfig } from '@canopy/common';
import { Database } from '../database';
import { StoreModule } from '../store.module';
import { FILE_STORAGE, type FileStorage } from './file-storage.port';
import { FilesRepository } from './files.repository';
import { FilesService } from './files.service';
import { PostgresFileStorage } from './postgres-file.storage';
import { S3FileStorage } from './s3-file.storage';

export function createFileStorage(config: CanopyConfig, db: Database): FileStorage {
  if (config.files.storage === 'postgres') return new PostgresFileStorage(db);
  const s3 = config.files.s3;
  return new S3FileStorage({
    endpoint: s3.endpoint,
    region: s3.region,
    bucket: s3.bucket!,
    credentials: s3.credentials,
    prefix: s3.prefix,
    forcePathStyle: s3.forcePathStyle,
  });
}

/**
 * Removes the files no session refers to any more, every FILES_SWEEP_INTERVAL_MS in each process (two processes
 * never take the same file: the sweep's statement skips rows another holds); closes the S3 client at shutdown.
 */
@Injectable()
class FilesLifecycle implements OnApplicationBootstrap, OnApplicationShutdown {
  private timer: NodeJS.Timeout | null = null;
  private sweeping: Promise<unknown> | null = null;
  private readonly logger = new Logger('Files');

  constructor(
    @Inject(FILE_STORAGE) private readonly storage: FileStorage,
    @Inject(CANOPY_CONFIG) private readonly config: CanopyConfig,
    private readonly files: FilesService,
  ) {}

  onApplicationBootstrap(): void {
    const every = this.config.files.sweepIntervalMs;
    if (every === 0) return;
    this.timer = setInterval(() => {
      if (this.sweeping) return;
      this.sweeping = this.files
        .sweep()
        .catch((err: unknown) => this.logger.warn({ err }, 'the file sweep failed'))
        .finally(() => (this.sweeping = null));
    }, every);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.sweeping;
    if (this.storage instanceof S3FileStorage) this.storage.destroy();
  }
}

@Module({})
export class FilesModule {
  private static root: DynamicModule | null = null;

  static forRoot(): DynamicModule {
    FilesModule.root ??= {
      module: FilesModule,
      imports: [StoreModule.forRoot()],
      providers: [
        {
          provide: FILE_STORAGE,
          inject: [CANOPY_CONFIG, Database],
          useFactory: (c: CanopyConfig, db: Database) => createFileStorage(c, db),
        },
        {
          provide: FilesRepository,
          inject: [Database],
          useFactory: (db: Database) => new FilesRepository(db),
        },
        {
          provide: FilesService,
          inject: [CANOPY_CONFIG, FilesRepository, FILE_STORAGE],
          useFactory: (c: CanopyConfig, files: FilesRepository, storage: FileStorage) =>
            new FilesService(files, storage, { maxBytes: c.files.maxBytes }),
        },
        FilesLifecycle,
      ],
      exports: [FILE_STORAGE, FilesRepository, FilesService],
    };
    return FilesModule.root;
  }
}
