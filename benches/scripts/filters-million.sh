#!/bin/bash
# One settled 1M fleet; serve runs two cycles (poll 10s); reports the second cycle's sentinel CPU,
# the fake API's CPU over it, and the served lines of simulate.
# usage: 25-million.sh BIN LABEL PORT [extra yaml lines...]
set -u
BIN=$1; LABEL=$2; PORT=$3; shift 3
CFG=/tmp/25-cfg-$LABEL.yaml
sed -e "s/^poll_interval: 1h/poll_interval: 10s/" -e "s#127.0.0.1:8000#127.0.0.1:$PORT#" examples/scale.yaml > $CFG
for line in "$@"; do echo "$line" >> $CFG; done
$BIN simulate --api-only --clusters 1000000 --initial reconciled --listen 127.0.0.1:$PORT > /tmp/25-api-$LABEL.log 2>&1 &
API=$!
for i in $(seq 1 600); do curl -s -o /dev/null "http://127.0.0.1:$PORT/api/hyperfleet/v1/clusters?size=1" && break; sleep 1; done
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
BROKER_TYPE=stdout $BIN serve -c $CFG > /dev/null 2> /tmp/25-serve-$LABEL.log &
S=$!
wait_cycles() { for i in $(seq 1 1200); do n=$(grep -c 'Trigger cycle completed' /tmp/25-serve-$LABEL.log); [ "$n" -ge "$1" ] && return; sleep 0.1; done; echo "timeout waiting for cycle $1"; }
wait_cycles 1; s1=$(cpu $S); a1=$(cpu $API)
wait_cycles 2; s2=$(cpu $S); a2=$(cpu $API)
wait_cycles 3; sleep 1
kill $S; sleep 0.5; kill $API; wait 2>/dev/null
echo "$LABEL: second cycle sentinel_cpu_s=$(echo "($s2-$s1)/100" | bc -l | cut -c1-5) api_cpu_s=$(echo "($a2-$a1)/100" | bc -l | cut -c1-5) load=$(cut -d' ' -f1 /proc/loadavg)"
grep 'Trigger cycle completed' /tmp/25-serve-$LABEL.log | sed 's/^/  /'
tr '\r' '\n' < /tmp/25-api-$LABEL.log | grep -a 'served /' | head -3 | sed 's/^/  /'
