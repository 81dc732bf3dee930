# One image, two roles: the api (default) and the worker (`node dist/apps/worker/apps/worker/src/main.js`).
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm install --no-audit --no-fund
COPY . .
RUN npm run prisma:generate && npx nest build api && npx nest build worker && npm run build:web && npm prune --omit=dev

FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
# The malloc settings of scripts/lib/service-process.mjs (npm start and the HTTP bench use that file): keep equal.
ENV MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=131072
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/prisma ./prisma
COPY --from=build /app/package.json ./package.json
USER node
EXPOSE 3000
# The distributed deployables' V8 flag (scripts/lib/service-process.mjs: DISTRIBUTED_NODE_ARGS); keep equal.
CMD ["node", "--max-semi-space-size=64", "dist/apps/api/apps/api/src/main.js"]
