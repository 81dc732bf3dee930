// Prisma CLI configuration (tooling only: the service gets its database URL from its validated config).
// `prisma generate` needs no database; a placeholder URL keeps it working when DATABASE_URL is unset.
import { defineConfig } from 'prisma/config';

export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? 'postgresql://canopy@localhost:5432/canopy' },
});
