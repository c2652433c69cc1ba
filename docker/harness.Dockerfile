# The harness CLI in a container, for CI runners that can pull a Node image (this project's own
# machines have no registry: there, run bin/harness.mjs on the host). It drives the host's Docker
# engine through the mounted socket; see the `harness` service in docker-compose.yml.
ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /opt/harness
COPY package.json package-lock.json ./
# No install scripts: the native add-ons (ssh2, cpu-features) are stubbed out of the bundle anyway.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY scripts/build.mjs scripts/build.mjs
COPY src src
RUN npm run build

# The bundle in dist/ is self-contained (dependencies included), so the final image needs no node_modules.
FROM ${NODE_IMAGE}
WORKDIR /opt/harness
COPY package.json ./
COPY bin bin
COPY --from=build /opt/harness/dist dist
# harness builds its sandbox image from this folder, which it finds next to package.json.
COPY sandbox sandbox
ENTRYPOINT ["node", "/opt/harness/bin/harness.mjs"]
CMD ["--help"]
