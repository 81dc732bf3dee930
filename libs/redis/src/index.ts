// @canopy/redis: the Redis connections of the distributed runtime (one server or a Redis Cluster) that the realtime
// adapters and the queue share, and the NestJS module that opens them from the configuration.

export * from './redis-connection';
export * from './redis-connections';
export * from './redis.module';
