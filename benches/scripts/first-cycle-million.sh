#!/bin/bash
# The first cycle over 1,000,000 sample clusters (docs/performance.md, "The cycle on one
# thread"): the sentinel's CPU (user + sys from /proc, read when `Trigger cycle completed` is
# logged), its memory, context switches and the cycle's duration.
# usage: first-cycle-million.sh BIN PORT [INITIAL [ENV=VALUE...]]
#   INITIAL: reconciled (default: every decision a skip) or new (every cluster published)
#   ENV: the broker and tracing, e.g. BROKER_TYPE=rabbitmq
#        BROKER_RABBITMQ_URL=amqp://guest:guest@127.0.0.1:5672/ HYPERFLEET_TRACING_ENABLED=true
#        (default BROKER_TYPE=stdout; examples/scale.yaml turns tracing off)
set -u
BIN=$1; PORT=$2; INITIAL=${3:-reconciled}; shift $(( $# < 3 ? $# : 3 ))
ENVS=("$@"); [ ${#ENVS[@]} -eq 0 ] && ENVS=(BROKER_TYPE=stdout)
CFG=/tmp/first-cycle-$PORT.yaml
sed "s#127.0.0.1:8000#127.0.0.1:$PORT#" examples/scale.yaml > "$CFG"
$BIN simulate --api-only --profile sample --initial "$INITIAL" --clusters 1000000 \
  --listen 127.0.0.1:$PORT > /tmp/first-cycle-api-$PORT.log 2>&1 &
API=$!
for _ in $(seq 1 600); do curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break; sleep 0.5; done
LOG=/tmp/first-cycle-serve-$PORT.log
env "${ENVS[@]}" $BIN serve -c "$CFG" --health-server-bindaddress 127.0.0.1:$((PORT + 1)) \
  --metrics-server-bindaddress 127.0.0.1:$((PORT + 2)) > /dev/null 2> "$LOG" &
S=$!
for _ in $(seq 1 3000); do grep -q 'Trigger cycle completed' "$LOG" && break; sleep 0.1; done
TCK=$(getconf CLK_TCK)
read -r ut st < <(awk '{print $14, $15}' /proc/$S/stat)
echo "cpu_s=$(echo "scale=2; ($ut + $st) / $TCK" | bc) sys_s=$(echo "scale=2; $st / $TCK" | bc)" \
  "$(grep -E 'VmHWM|RssAnon' /proc/$S/status | tr -s ' \t' ' ' | tr '\n' ' ')" \
  "ctxsw=$(grep ctxt_switches /proc/$S/status | awk '{s += $2} END {print s}')" \
  "load=$(cut -d' ' -f1 /proc/loadavg)"
grep 'Trigger cycle completed' "$LOG" | sed 's/.*\(duration=[^ ]*\).*/\1/'
kill -TERM $S; sleep 1; kill $API 2>/dev/null; wait 2>/dev/null
