#!/usr/bin/env bash
# Packs what bench/many_cores.py needs on a machine with many cores and no package registry
# (Python 3.12 there, with psutil, httpx, protobuf, rich and pyarrow installed) into .scale/
# (ignored by git): the demo binary, this tree's source, the wheels of the other pure-Python
# dependencies, and run.sh. There, in the copied tree's root: bash .scale/run.sh [many_cores.py's options]
# (its log goes to $OUT/many_cores.log, or /tmp).
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
excl=$(git rev-parse --git-path info/exclude)
grep -qx '/.scale/' "$excl" 2>/dev/null || echo '/.scale/' >> "$excl"
rm -rf .scale && mkdir -p .scale/whl .scale/src
go=${GO:-$root/.venv/bin/go}
(cd go_helper && GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local CGO_ENABLED=0 "$go" build -o "$root/.scale/demo" ./cmd/livetrace-demo)
git ls-files -z livetrace setup.py pyproject.toml README.md bench tests/__init__.py tests/wirechunks.py | tar --null -T - -c | tar -x -C .scale/src
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .scale/whl \
  trio outcome sniffio construct attrs sortedcontainers idna perfetto protobuf==7.35.1
# py-spy, for many_cores.py --pyspy (device.sh's SPY=1): a binary wheel of its own platform tags.
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux_2_5_x86_64 \
  --platform manylinux1_x86_64 -d .scale/whl py-spy
cat > .scale/run.sh <<'RUN'
#!/bin/bash
set -u
D=$(cd "$(dirname "$0")" && pwd)
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$D"/whl/*.whl || exit 1
(cd "$D/src" && python3 setup.py -q build_ext --inplace -j "$(nproc)" >/tmp/build.log 2>&1) || { cat /tmp/build.log; exit 1; }
export PYTHONPATH=$D/src:/tmp/site
cd /tmp && python3 "$D/src/bench/many_cores.py" "$D/demo" "$@" 2>&1 | tee "${OUT:-/tmp}/many_cores.log"
RUN
chmod +x .scale/run.sh
cp bench/many_cores_device.sh .scale/device.sh  # the whole of docs/decoder.md's "On 16 cores, again"
du -sh .scale
