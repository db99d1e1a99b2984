#!/usr/bin/env bash
# Regenerate submissions/example: the example submission the checker and the leaderboard test against.
#
#   make example                       (= bash submissions/make-example.sh)
#
# Runs the suite itself with the submission profile on this machine: ctr-dlrm
# (the fastest task) trained to its target 5 times in each framework, then
# served by LoadGen's Offline scenario in performance and accuracy modes with
# weights from those runs, packaged, and checked. About 10 minutes on 2 cores;
# run it on a quiet machine from a clean checkout (the logs record the commit,
# and a modified checkout earns a REP003 warning).
set -euo pipefail

LF="${LF:-levelfield}"
OUT="${OUT:-submissions/example}"
WORK="${WORK:-build/example-runs}"
TASK=ctr-dlrm
ORG=levelfield
SEED=2000   # run i of every framework uses seed 2000 + i

rm -rf "$WORK"
mkdir -p "$WORK/runs"
# LoadGen sizes the one Offline query as expected_qps x min duration x 1.1, and the run is VALID only
# if answering it lasts the rules' 60 s: so expected_qps must be at least the real throughput
# (measured here: 205k-221k samples/s for ctr-dlrm through the harness; 250k leaves a margin).
cat > "$WORK/user.yaml" <<'YAML'
version: 1
offline:
  expected_qps: 250000
YAML
"$LF" sysinfo --out "$WORK/example-box.json" --set submitter=$ORG --set division=closed --set status=available \
    --set system_type=datacenter --set "system_name=levelfield CI machine (2 vCPU)" > /dev/null
for fw in pytorch tensorflow jax; do
    "$LF" train --task $TASK --framework $fw --seed $SEED --system "$WORK/example-box.json" --org $ORG \
        --division closed --save-weights --out "$WORK/runs/$fw-training"
    weights=$(ls "$WORK/runs/$fw-training"/weights_*.npz | head -n 1)
    for mode in performance accuracy; do
        "$LF" infer --task $TASK --framework $fw --scenario offline --mode $mode --weights "$weights" \
            --user-conf "$WORK/user.yaml" --out "$WORK/runs/$fw-offline-$mode"
    done
done
"$LF" package --runs "$WORK/runs" --system "$WORK/example-box.json" --org $ORG --division closed --out "$OUT" --force
"$LF" check "$OUT"
