#!/usr/bin/env bash
# Installs what onceflow needs on a fresh machine; a second run only checks and returns in seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
say() { printf 'setup: %s\n' "$*"; }

# 1. Debian libraries librdkafka links against (the client is built from source here).
debs=(libssl-dev libsasl2-dev zlib1g-dev libzstd-dev liblz4-dev libcurl4-openssl-dev build-essential python3 openssl)
missing=()
for p in "${debs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then sudo=sudo; else sudo=; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# 1b. Chromium for the console's browser test (driven by playwright-core, which downloads no browser).
if ! dpkg -s chromium >/dev/null 2>&1; then
  say "installing chromium (the console's browser test)"
  if [ "$(id -u)" -ne 0 ]; then sudo=sudo; else sudo=; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi

# 2. npm dependencies; the Kafka client's prebuilt binary cannot be downloaded here, so build it.
export CKJS_LINKING=dynamic
native_ok() { node -e "require('@confluentinc/kafka-javascript')" >/dev/null 2>&1; }
# The install is stamped with the lock file's content hash, not compared by mtime: a fresh clone or a
# worktree sharing node_modules has a newer lock file by mtime alone, and `npm ci` would wipe a good install.
lock_hash=$(sha256sum package-lock.json | cut -d' ' -f1)
stamp=node_modules/.onceflow-lock-hash
if [ ! -f node_modules/.package-lock.json ] || [ "$(cat "$stamp" 2>/dev/null)" != "$lock_hash" ] || ! native_ok; then
  say "npm ci (builds @confluentinc/kafka-javascript from source: several minutes on a small machine)"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$lock_hash" > "$stamp"
fi
# npm's exit code does not prove the native build ran: load it.
if ! native_ok; then
  say "the native Kafka client did not load; rebuilding it"
  npm rebuild @confluentinc/kafka-javascript --loglevel=error
  native_ok || { echo "setup: @confluentinc/kafka-javascript does not load after a rebuild" >&2; exit 1; }
fi

# 3. Kafka and the schema registry from Maven Central into the jar cache (ONCEFLOW_CACHE, else
# ~/.cache/onceflow): the same fetch `dev up` does on first use, so there is one fetcher.
command -v java >/dev/null || { echo "setup: java is missing (Java 17+ runs the local Kafka)" >&2; exit 1; }
node --import tsx src/cli/main.ts setup
say "ready in $(( $(date +%s) - started )) s"
