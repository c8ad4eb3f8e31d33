# onceflow runs its TypeScript sources through tsx: no build step, the image is the repository.
FROM node:20-bookworm

# librdkafka is linked against the system libraries (CKJS_LINKING=dynamic) rather than downloaded
# prebuilt, the same way scripts/setup.sh builds it for development.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libssl-dev libsasl2-dev zlib1g-dev libzstd-dev liblz4-dev libcurl4-openssl-dev build-essential python3 \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
ENV CKJS_LINKING=dynamic
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error \
 && node -e "require('@confluentinc/kafka-javascript')"

COPY . .
# Type-checks the example topology now, so that a container's `run` finds the pass cached in
# node_modules/.cache instead of spending seconds and a few hundred MB on the compiler at every start.
RUN node bin/onceflow.js describe topology/orders.ts > /dev/null
RUN printf '#!/bin/sh\nexec node --max-semi-space-size=64 /app/bin/onceflow.js "$@"\n' > /usr/local/bin/onceflow && chmod +x /usr/local/bin/onceflow

USER node
# The young generation as bin/onceflow.js's shebang sets it (docs/operations.md#the-nodejs-heap).
ENTRYPOINT ["node", "--max-semi-space-size=64", "/app/bin/onceflow.js"]
