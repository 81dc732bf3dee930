export * from './feedback.repository';
export * from './feedback.service';
export * from './model-stats.repository';
export * from './model-stats.service';
export * from './shares.repository';
export * from './shares.service';
export * from './sharing.module';
