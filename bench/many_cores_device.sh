#!/bin/bash
# What docs/decoder.md's "On 16 cores, again" ran, on a machine with many cores and no package
# registry, from the folder bench/many_cores.sh packs (it copies this there as .scale/device.sh):
# W1's views (recording that load), the recording decoded by decode_batches with 1-8 jobs and
# replayed through the views at jobs 1 and J with the service gone, then W2's views. Logs go to $OUT.
#   bash .scale/device.sh        (PROCS, W1, W2, SECS, JOBS, LIM, RVIEWS, PY: see below)
set -u
D=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
P=${PROCS:-16} W1=${W1:-16} W2=${W2:-48} S=${SECS:-6} J=${JOBS:-7} LIM=${LIM:-40} PY=${PY:-python3}
export PYTHONUNBUFFERED=1
echo "== $(nproc) cores; $($PY --version); $(grep -m1 'model name' /proc/cpuinfo)"
$PY -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$D"/whl/*.whl || exit 1
SECONDS=0
(cd "$D/src" && $PY setup.py -q build_ext --inplace -j "$(nproc)" >/tmp/build.log 2>&1) || tail -30 /tmp/build.log
echo "build ${SECONDS}s"
export PYTHONPATH=$D/src:/tmp/site
cd /tmp
$PY -c "import livetrace; print('core:', livetrace.implementation(), livetrace.__file__)" || exit 1
M=$D/src/bench/many_cores.py
$PY "$M" "$D/demo" --procs "$P" --workers "$W1" --jobs "$J" --seconds "$S" --limit "$LIM" 2>&1 | tee "$OUT/mc$W1.log"
echo "== at ${SECONDS}s"
cp /tmp/many-cores.trace /tmp/w1.trace
$PY "$D/src/bench/parallel_decode.py" --jobs 1,2,4,8 --runs 2 /tmp/w1.trace 2>&1 | tee "$OUT/pdecode.log"
$PY "$D/src/bench/parallel_decode.py" --jobs 1,4,8 --runs 1 --switch-interval 0.0002 /tmp/w1.trace 2>&1 | tee -a "$OUT/pdecode.log"
echo "== at ${SECONDS}s"
$PY "$D/src/bench/live_scale.py" --trace /tmp/w1.trace --views "${RVIEWS:-tail-jsonl,tail-spans,top,tail-log}" --jobs "1,$J" 2>&1 | tee "$OUT/replay$W1.log"
echo "== at ${SECONDS}s"
$PY "$M" "$D/demo" --procs "$P" --workers "$W2" --jobs "$J" --seconds "$S" --limit "$LIM" 2>&1 | tee "$OUT/mc$W2.log"
echo "== done at ${SECONDS}s"
