#!/bin/bash
# scheduler_idle.sh N: the CPU a debug `codarisd` uses over 60 s idle with `[scheduler] enabled`
# and N jobs due once a year (the scheduler's idle cost, docs/performance.md). Run it for N=1000
# and N=0 in the same minute: the two should match, since the scheduler keeps one timer for the
# earliest due job and wakes for nothing else. Needs `cargo build --bins` first.
set -e
B=$(cd "$(dirname "$0")/../.." && pwd)/target/debug
N=$1
R=$(mktemp -d /tmp/idle-XXXX)
mkdir -p $R/state $R/cfg/scheduler
printf '[provider]\nname = "scripted"\n[scheduler]\nenabled = true\n' > $R/cfg/config.toml
for i in $(seq 1 $N); do
  printf -- '---\ndescription: job %s\nschedule: 0 3 1 1 *\n---\nnothing\n' $i > $R/cfg/scheduler/job$i.md
done
export HOME=$R CODARIS_STATE_DIR=$R/state CODARIS_CONFIG=$R/cfg/config.toml
$B/codaris daemon start >/dev/null
PID=$(cat $R/state/codarisd.pid)
$B/codaris scheduler list --json | python3 -c "import json,sys; print('jobs listed', len(json.load(sys.stdin)['jobs']))"
sleep 5
a=$(awk '{print $14+$15}' /proc/$PID/stat)
sleep 60
b=$(awk '{print $14+$15}' /proc/$PID/stat)
echo "N=$N cpu ticks over 60 s: $((b-a)) (1 tick = 10 ms)"
$B/codaris daemon stop >/dev/null
rm -rf $R
