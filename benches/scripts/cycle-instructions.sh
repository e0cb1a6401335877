#!/bin/bash
# Instructions per resource of one `serve` cycle (docs/performance.md, "A whole `serve` cycle,
# in instructions"): callgrind over the sentinel process, one cycle over a fleet of 2,000 and one
# over 12,000 clusters served by `simulate --api-only`, (Ir₁₂₀₀₀ − Ir₂₀₀₀) / 10,000.
# usage: cycle-instructions.sh BIN PORT PROFILE ENCODING [ENV=VALUE... | --serve-flag...]
#   PROFILE: realistic or varied (simulate's --profile; a third of the clusters due)
#   ENCODING: plain, or gzip (the fake API gzips its pages, as the real API does)
#   ENV: e.g. BROKER_TYPE=rabbitmq BROKER_RABBITMQ_URL=amqp://guest:guest@127.0.0.1:5672/
#        (default BROKER_TYPE=stdout)
#   serve flags, each one argument: e.g. --tracing-enabled=true --log-format=json
#        (examples/scale.yaml: tracing off, text logs at info to stderr)
#   API_BIN: the binary serving the fleet (default BIN), e.g. one build's fake API for two
#        builds' sentinels, so that both read the same bytes
# The cycle has ended when /metrics counts one poll; then serve gets SIGTERM and callgrind
# writes its counts.
set -u
BIN=$1; PORT=$2; PROFILE=$3; ENCODING=$4; shift 4
API_BIN=${API_BIN:-$BIN}
ENVS=(); FLAGS=()
for arg in "$@"; do
  case $arg in --*) FLAGS+=("$arg") ;; *) ENVS+=("$arg") ;; esac
done
[ ${#ENVS[@]} -eq 0 ] && ENVS=(BROKER_TYPE=stdout)
GZIP=(); [ "$ENCODING" = gzip ] && GZIP=(--gzip)
CFG=/tmp/cycle-ir-$PORT.yaml
sed "s#127.0.0.1:8000#127.0.0.1:$PORT#" examples/scale.yaml > "$CFG"
METRICS=127.0.0.1:$((PORT + 2))
declare -A IR
for N in 2000 12000; do
  $API_BIN simulate --api-only --profile "$PROFILE" --clusters $N --listen 127.0.0.1:$PORT \
    "${GZIP[@]}" -q > /tmp/cycle-ir-api-$PORT.log 2>&1 &
  API=$!
  for _ in $(seq 1 600); do
    curl -s -o /dev/null "http://127.0.0.1:$PORT/api/hyperfleet/v1/clusters?size=1" && break
    sleep 0.5
  done
  OUT=/tmp/cycle-ir-$PORT-$N.out
  env "${ENVS[@]}" valgrind --tool=callgrind --callgrind-out-file="$OUT" $BIN serve -c "$CFG" \
    --health-server-bindaddress 127.0.0.1:$((PORT + 1)) --metrics-server-bindaddress $METRICS \
    "${FLAGS[@]}" > /dev/null 2> /tmp/cycle-ir-serve-$PORT-$N.log &
  S=$!
  for _ in $(seq 1 36000); do
    curl -s "http://$METRICS/metrics" | grep -q '^hyperfleet_sentinel_poll_duration_seconds_count.* [1-9]' && break
    kill -0 $S 2>/dev/null || break
    sleep 0.5
  done
  if ! kill -TERM $S 2>/dev/null; then
    kill $API; echo "serve ended before its cycle:"; tail -5 /tmp/cycle-ir-serve-$PORT-$N.log
    exit 1
  fi
  wait $S 2>/dev/null
  kill $API; wait $API 2>/dev/null
  IR[$N]=$(grep -E '^(summary|totals):' "$OUT" | head -1 | awk '{print $2}')
  echo "$N clusters: ${IR[$N]} Ir ($(grep -c 'Published event' /tmp/cycle-ir-serve-$PORT-$N.log) published lines)"
done
echo "per resource: $(( (IR[12000] - IR[2000]) / 10000 )) Ir ($PROFILE, $ENCODING, ${ENVS[*]} ${FLAGS[*]}; load $(cut -d' ' -f1 /proc/loadavg))"
