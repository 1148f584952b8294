#!/usr/bin/env bash
# Property test over seeds x rank counts (1-4) x fleet shapes (one and three devices per rank,
# and a fleet that does not divide evenly): while capacity allows, every run is bitwise equal
# to the reference; every run (exhausted or not) leaks no NaN/Inf, allocates nothing and creates
# no communicator after start-up, and leaves a log that passes the schema check. A run that ends
# with capacity exhausted says so in /final, and is compared with the same fleet on one rank:
# identical /steps, /events, /units and /final (checksum included, timings aside).
#   property.sh AGEFENCE REPORT MPIEXEC WORKDIR SCENARIO
set -uo pipefail
here=$(dirname "$0")
. "$here/lib.sh"
agefence=$1 report=$2 mpiexec=$3 work=$4 scenario=$5
rm -rf "$work" && mkdir -p "$work"
runs=0 failed=0 exhausted=0 sdc_runs=0
for seed in 11 23 37 41; do
  for np in 1 2 3 4; do
    for shape in per1 per3 uneven; do
      case $shape in
        per1) devices=$np ;;
        per3) devices=$((3 * np)) ;;
        uneven) devices=$((2 * np + 1)) ;;
      esac
      log=$work/s${seed}_n${np}_$shape.h5
      set_fleet=(--set scenario.seed=$seed --set scenario.devices=$devices
                 --set event.1.device=$((devices - 1)))
      "$mpiexec" -n "$np" "$agefence" run -q -c "$scenario" -o "$log" \
        "${set_fleet[@]}" >"$work/out" 2>&1
      rc=$?
      # The same fleet on one rank, once per fleet: the reference of the comparison below.
      ref=$work/s${seed}_d${devices}_n1.h5
      if [ ! -e "$ref" ]; then
        "$mpiexec" -n 1 "$agefence" run -q -c "$scenario" -o "$ref" "${set_fleet[@]}" \
          >"$work/out.ref" 2>&1
      fi
      runs=$((runs + 1))
      why=""
      if [ "$rc" != 0 ] && [ "$rc" != 3 ] && [ "$rc" != 4 ]; then why="exit $rc"; fi
      if [ -z "$why" ] && ! "$report" --check "$log" >/dev/null; then why="schema check"; fi
      attr() { "$report" --attr /final "$1" "$log"; }
      if [ -z "$why" ]; then
        clean=$(af_clean_run "$report" "$log") || why=$clean
        if [ "$rc" = 0 ]; then
          [ "$(attr bitwise_equal)" = 1 ] || why="not bitwise equal"
        elif [ "$rc" = 3 ]; then
          sdc_runs=$((sdc_runs + 1))
          why=$(af_sdc_mismatch "$report" "$log") && why=""
        else
          exhausted=$((exhausted + 1))
          [ "$(attr exit_reason)" = capacity_exhausted ] || why="exit 4 without capacity_exhausted"
        fi
      fi
      if [ -z "$why" ] && [ "$np" != 1 ] &&
        ! "$report" --same "$log" "$ref" >"$work/same" 2>&1; then
        why="differs from the same fleet on one rank: $(head -4 "$work/same" | tr '\n' ' ')"
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
echo "$((runs - failed)) passed, $failed failed ($exhausted ended with capacity exhausted, $sdc_runs with a committed finite corruption)"
[ "$failed" = 0 ]
