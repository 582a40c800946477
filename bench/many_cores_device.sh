#!/bin/bash
# What docs/decoder.md's 16-core figures ran, on a machine with many cores and no package registry,
# from the folder bench/many_cores.sh packs (it copies this there as .scale/device.sh). Issue 27's
# targets first, so that a run cut short still answers them: W2's views (tail -k Log, the 5 ms blocked
# spans, top with its default one job and with J, flight, profile), W1's (the JSON tail into /dev/null,
# text, spans); then, while BUDGET seconds last, W2's span tail and top with generations as long
# as their period (no --generation-mb: what the default of 8 MiB gained), top with twice the default cap, the W1 recording replayed through the views at jobs 1 and J with the service gone, and decode_batches
# with 1-8 jobs. Logs go to $OUT.
#   bash .scale/device.sh        (PROCS, W1, W2, SECS, JOBS, LIM, BUDGET, RVIEWS, PY, SPY: see below;
#                                 SPY=1 records top with py-spy, whose wheel must then be in .scale/whl)
# A run took about 250 s of a 16-core machine's time.
set -u
D=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
P=${PROCS:-16} W1=${W1:-16} W2=${W2:-48} S=${SECS:-6} J=${JOBS:-7} LIM=${LIM:-25} PY=${PY:-python3}
BUDGET=${BUDGET:-480}
export PYTHONUNBUFFERED=1
echo "== $(nproc) cores; $($PY --version); $(grep -m1 'model name' /proc/cpuinfo)"
$PY -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$D"/whl/*.whl || exit 1
SECONDS=0
(cd "$D/src" && $PY setup.py -q build_ext --inplace -j "$(nproc)" >/tmp/build.log 2>&1) || tail -30 /tmp/build.log
echo "build ${SECONDS}s"
export PYTHONPATH=$D/src:/tmp/site PATH=/tmp/site/bin:$PATH
[ -n "${SPY:-}" ] && mkdir -p "$OUT/spy"
cd /tmp
$PY -c "import livetrace; print('core:', livetrace.implementation(), livetrace.__file__)" || exit 1
M=$D/src/bench/many_cores.py
# The next step starts only if the time it may take (its second argument) is left.
step() { local name=$1 need=$2; shift 2
  if (( SECONDS + need > BUDGET )); then echo "== skipped $name at ${SECONDS}s (needs ${need}s)"; return; fi
  echo "== $name at ${SECONDS}s"; "$@"; }
mc() { $PY "$M" "$D/demo" --procs "$P" --seconds "$S" --limit "$LIM" "$@"; }
step "W2 targets" 200 mc --workers "$W2" --jobs "$J" --only tail-log,spans-5ms-blocked,top@1,top,flight,profile 2>&1 | tee "$OUT/mc$W2.log"
step "W1 targets" 110 mc --workers "$W1" --jobs "$J" --only tail-jsonl-null,tail-text,tail-spans-null 2>&1 | tee "$OUT/mc$W1.log"
cp /tmp/many-cores.trace /tmp/w1.trace 2>/dev/null
# What 2026-11-28's run left open: the span tail's lag and top's shedding against generations of a
# period's length, as they were before the 8 MiB default, and whether top keeps up with twice the
# default cap (with py-spy's view of every thread, where it is carried in).
step "W2, generations by time only" 80 mc --workers "$W2" --jobs "$J" --only spans-5ms-blocked,top \
  --extra "--generation-mb 0" 2>&1 | tee "$OUT/mc$W2-bytime.log"
step "W2, top with 8 GiB" 45 mc --workers "$W2" --jobs "$J" --only top --extra "--max-pipeline-mb 8192" \
  ${SPY:+--pyspy "$OUT/spy"} 2>&1 | tee "$OUT/mc$W2-top8g.log"
step "replay" 90 $PY "$D/src/bench/live_scale.py" --trace /tmp/w1.trace --views "${RVIEWS:-tail-jsonl,tail-log,tail-spans}" \
  --jobs "1,$J" 2>&1 | tee "$OUT/replay$W1.log"
step "decode_batches" 40 $PY "$D/src/bench/parallel_decode.py" --jobs 1,2,4,8 --runs 1 /tmp/w1.trace 2>&1 | tee "$OUT/pdecode.log"
echo "== done at ${SECONDS}s"
