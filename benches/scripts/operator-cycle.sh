#!/bin/bash
# Instructions per resource of one `serve` cycle in the configuration operators run (issue 36;
# docs/performance.md, "The operators' configuration"): the varied fleet (a page gzips ~12×,
# a third due), its pages gzipped as the API gzips them for a client that asks, logs as JSON
# at info (a `Published event` line per event, to stderr), tracing on (Go's default: every span
# sampled, the stdout exporter), events to the local RabbitMQ with publisher confirms (the
# default). Two fleet sizes differenced by cycle-instructions.sh.
# usage: operator-cycle.sh BIN PORT [RABBITMQ_URL]
set -u
BIN=$1; PORT=$2; URL=${3:-amqp://guest:guest@127.0.0.1:5672/}
cd "$(dirname "$0")/../.."
exec benches/scripts/cycle-instructions.sh "$BIN" "$PORT" varied gzip \
  BROKER_TYPE=rabbitmq "BROKER_RABBITMQ_URL=$URL" \
  --tracing-enabled=true --log-format=json
