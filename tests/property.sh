#!/usr/bin/env bash
# Property test over seeds x rank counts (1-4) x fleet shapes (one and three devices per rank,
# and a fleet that does not divide evenly): while capacity allows, every run is bitwise equal
# to the reference; every run (exhausted or not) leaks no NaN/Inf, allocates nothing after
# start-up, and leaves a log that passes the schema check.
#   property.sh AGEFENCE REPORT MPIEXEC WORKDIR SCENARIO
set -uo pipefail
agefence=$1 report=$2 mpiexec=$3 work=$4 scenario=$5
rm -rf "$work" && mkdir -p "$work"
runs=0 failed=0 exhausted=0
for seed in 11 23 37 41; do
  for np in 1 2 3 4; do
    for shape in per1 per3 uneven; do
      case $shape in
        per1) devices=$np ;;
        per3) devices=$((3 * np)) ;;
        uneven) devices=$((2 * np + 1)) ;;
      esac
      log=$work/s${seed}_n${np}_$shape.h5
      "$mpiexec" -n "$np" --oversubscribe "$agefence" run -q -c "$scenario" -o "$log" \
        --set scenario.seed=$seed --set scenario.devices=$devices \
        --set event.1.device=$((devices - 1)) >"$work/out" 2>&1
      rc=$?
      runs=$((runs + 1))
      why=""
      if [ "$rc" != 0 ] && [ "$rc" != 4 ]; then why="exit $rc"; fi
      if [ -z "$why" ] && ! "$report" --check "$log" >/dev/null; then why="schema check"; fi
      attr() { "$report" --attr /final "$1" "$log"; }
      if [ -z "$why" ]; then
        [ "$(attr nonfinite_leaked_total)" = 0 ] || why="NaN/Inf leaked"
        [ "$(attr allocs_after_init)" = 0 ] || why="allocations after start-up"
        if [ "$rc" = 0 ]; then
          [ "$(attr bitwise_equal)" = 1 ] || why="not bitwise equal"
        else
          exhausted=$((exhausted + 1))
          [ "$(attr exit_reason)" = capacity_exhausted ] || why="exit 4 without capacity_exhausted"
        fi
      fi
      if [ -n "$why" ]; then
        failed=$((failed + 1))
        echo "FAIL seed=$seed np=$np devices=$devices: $why"
        tail -5 "$work/out"
      else
        echo "ok   seed=$seed np=$np devices=$devices exit=$rc blackout=$(attr max_blackout)" \
             "drains=$(attr moves_drain_total) retries=$(attr retried_total)" \
             "rollbacks=$(attr rollbacks_total)"
      fi
    done
  done
done
echo "$((runs - failed)) passed, $failed failed ($exhausted ended with capacity exhausted)"
[ "$failed" = 0 ]
