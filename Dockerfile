# Image for the API and the worker of the production topology (docker-compose.yml):
#   API:    npm run api     (tsx src/server.ts; applies pending migrations at start)
#   worker: npm run worker  (tsx src/worker.ts)
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

# Dependencies first, so that source changes do not invalidate this layer. tsx is a runtime
# dependency: the services run TypeScript directly, as in development.
COPY package.json package-lock.json .npmrc ./
RUN npm ci --omit=dev && npm cache clean --force

COPY tsconfig.json ./
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities

USER node
ENV PORT=3000
EXPOSE 3000
CMD ["npm", "run", "--silent", "api"]
