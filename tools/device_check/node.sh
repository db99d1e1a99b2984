#!/usr/bin/env bash
# The device check (`levelfield device-check`) on a GPU node with no package index (tools/device_check/__init__.py):
#   bash tools/device_check/node.sh WHEELS_DIR OUT_DIR [TIME_LIMIT_S]
# run from a levelfield checkout. Installs the wheels of `make wheels` and this checkout into a folder of
# their own (LEVELFIELD_NODE_SITE, default /tmp/levelfield-site) with --no-index and --no-deps, beside the
# frameworks and packages the node already has (whatever their versions: the report records them), then
# runs the check. The node's own environment is left as it was.
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: bash tools/device_check/node.sh WHEELS_DIR OUT_DIR [TIME_LIMIT_S]" >&2
    exit 2
fi
wheels=$(cd "$1" && pwd)
out=$2
limit=${3:-360}
python=${PYTHON:-python3}
site=${LEVELFIELD_NODE_SITE:-/tmp/levelfield-site}
ls "$wheels"/*.whl >/dev/null 2>&1 || { echo "node.sh: $wheels: no wheels (expected make wheels' folder)" >&2; exit 2; }
rm -rf "$site"
# The build backend (wheels/build/) is found for building this checkout only; it is not installed.
"$python" -m pip install --quiet --no-index --no-deps --no-compile --no-warn-script-location \
    --find-links "$wheels/build" --target "$site" "$wheels"/*.whl .
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
# PYTHONSAFEPATH: the checkout's levelfield/ folder must not shadow the installed namespace package.
PYTHONSAFEPATH=1 exec "$python" -m levelfield device-check --out "$out" --time-limit-s "$limit" --repo "$PWD" \
    ${LEVELFIELD_CHECK_ARGS:-}
