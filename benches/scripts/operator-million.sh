#!/bin/bash
# The first cycle over 1,000,000 sample clusters in the configuration operators run (issue 36;
# docs/performance.md, "The operators' configuration"): the fake API gzips its pages, logs are
# JSON at info (a `Published event` line per event, to stderr), tracing is on (every span
# sampled, the stdout exporter), events go to the local RabbitMQ with publisher confirms.
# Reports the sentinel's CPU (user + sys from /proc, read when `Trigger cycle completed` is
# logged), its memory, the cycle's duration, and the bytes the API sent it: on the wire
# (the API's sockets' `bytes_acked`, headers included, from `ss`).
# usage: operator-million.sh BIN PORT [INITIAL [RABBITMQ_URL]]
#   INITIAL: reconciled (default: every decision a skip) or new (every cluster published)
set -u
BIN=$1; PORT=$2; INITIAL=${3:-reconciled}; URL=${4:-amqp://guest:guest@127.0.0.1:5672/}
cd "$(dirname "$0")/../.."
CFG=/tmp/operator-million-$PORT.yaml
sed "s#127.0.0.1:8000#127.0.0.1:$PORT#" examples/scale.yaml > "$CFG"
$BIN simulate --api-only --profile sample --initial "$INITIAL" --clusters 1000000 --gzip \
  --listen 127.0.0.1:$PORT > /tmp/operator-million-api-$PORT.log 2>&1 &
API=$!
for _ in $(seq 1 600); do curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break; sleep 0.5; done
LOG=/tmp/operator-million-serve-$PORT.log
BROKER_TYPE=rabbitmq BROKER_RABBITMQ_URL=$URL $BIN serve -c "$CFG" --tracing-enabled=true \
  --log-format=json --health-server-bindaddress 127.0.0.1:$((PORT + 1)) \
  --metrics-server-bindaddress 127.0.0.1:$((PORT + 2)) > /dev/null 2> "$LOG" &
S=$!
for _ in $(seq 1 6000); do grep -q 'Trigger cycle completed' "$LOG" && break; sleep 0.1; done
TCK=$(getconf CLK_TCK)
read -r ut st < <(awk '{print $14, $15}' /proc/$S/stat)
WIRE=$(ss -tinH state established "( sport = :$PORT )" | grep -o 'bytes_acked:[0-9]*' | cut -d: -f2 | paste -sd+ | bc)
echo "cpu_s=$(echo "scale=2; ($ut + $st) / $TCK" | bc) sys_s=$(echo "scale=2; $st / $TCK" | bc)" \
  "$(grep -E 'VmHWM|RssAnon' /proc/$S/status | tr -s ' \t' ' ' | tr '\n' ' ')" \
  "api_wire_bytes=${WIRE:-?} load=$(cut -d' ' -f1 /proc/loadavg)"
grep 'Trigger cycle completed' "$LOG" | grep -o 'total=[0-9]* published=[0-9]* skipped=[0-9]* duration=[^ "]*'
kill -TERM $S; sleep 1
kill $API 2>/dev/null; wait 2>/dev/null
