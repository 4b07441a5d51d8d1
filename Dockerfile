# Image for the API, the worker and the media edge of the production topology (docker-compose.yml):
#   API:        npm run api         (tsx src/server.ts; applies pending migrations at start)
#   worker:     npm run worker      (tsx src/worker.ts)
#   media edge: npm run media-edge  (tsx src/mediaEdge/main.ts)
# Configuration comes from the environment (see README). No Docker engine runs on the
# development machines of this project; this file is kept correct by reading.
FROM node:20-bookworm-slim

# The lock file is written by npm 11 (lockfileVersion 3, "allowScripts" for install scripts).
RUN npm install -g npm@11.19.1 && npm cache clean --force

WORKDIR /app
ENV NODE_ENV=production \
    npm_config_update_notifier=false \
    npm_config_fund=false \
    npm_config_audit=false

# The offline speech engines (Debian packages): Festival with the kal_diphone voice speaks
# the agent's lines on the media edge and the API's recordings of simulated calls
# (text2wave); pocketsphinx with its US English model hears the callers. The edge checks
# them at start-up (TTS_PROVIDER, STT_PROVIDER). TTS_PROVIDER=espeak needs espeak-ng too.
RUN apt-get update \
 && apt-get install -y --no-install-recommends festival festvox-kallpc16k pocketsphinx pocketsphinx-en-us \
 && rm -rf /var/lib/apt/lists/*

# Dependencies first, so that source changes do not invalidate this layer. tsx is a runtime
# dependency: the services run TypeScript directly, as in development.
COPY package.json package-lock.json .npmrc ./
RUN npm ci --omit=dev && npm cache clean --force

COPY tsconfig.json ./
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities

USER node
# The worker keeps its workflow bundle here (docs/reliability.md, "Restarting fast"): a worker
# process restarted in the same container reads it instead of running webpack again. /app is
# not the node user's to write.
ENV WORKFLOW_BUNDLE_CACHE_DIR=/tmp/workflow-bundles
# Inside a container the API must accept connections from the container network; the
# service's own default (127.0.0.1) keeps a bare `npm run api` on one machine private.
ENV PORT=3000 HOST=0.0.0.0
EXPOSE 3000
CMD ["npm", "run", "--silent", "api"]
