# Engram service image. Node 24 comes from the `node` devDependency like everywhere else, so the base only needs npm.
FROM node:24-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json .npmrc tsconfig.json ./
COPY src ./src
# npm ci's postinstall makes the template for new databases from the migrations in src (a first start skips initdb).
COPY scripts/prepare-runtime.ts ./scripts/
RUN npm ci --no-audit --no-fund
# Every interface inside the container (the published port decides who reaches it); the default elsewhere is
# 127.0.0.1 while name-only login is on.
# MALLOC_ARENA_MAX, MALLOC_MMAP_THRESHOLD_: npm start sets them too; here they also cover `node src/main.ts` run
# directly (fewer malloc arenas, large blocks given back when freed: less resident; docs/decisions.md).
ENV ENGRAM_DATA_DIR=/data \
    ENGRAM_HOST=0.0.0.0 \
    ENGRAM_PORT=8080 \
    MALLOC_ARENA_MAX=2 \
    MALLOC_MMAP_THRESHOLD_=131072
VOLUME /data
EXPOSE 8080
CMD ["npm", "start"]
