#!/usr/bin/env bash
# Regenerate submissions/example: the example submission the checker and the leaderboard test against.
#
#   make example                       (= bash submissions/make-example.sh)
#
# Runs the suite itself with the submission profile on this machine: ctr-dlrm
# (the fastest task) trained to its target 5 times in each framework, then
# served by LoadGen's Offline scenario with weights from those runs: the
# profile's 3 performance repeats (run_1/ .. run_3/, 60 s each) and one
# accuracy run; packaged, and checked. About 25 minutes on 2 cores, and
# several GB of RAM for the Offline query; run it on a quiet machine from a
# clean checkout (the logs record the commit, and a modified checkout earns a
# REP003 warning).
set -euo pipefail

LF="${LF:-levelfield}"
OUT="${OUT:-submissions/example}"
WORK="${WORK:-build/example-runs}"
TASK=ctr-dlrm
ORG=levelfield
SEED=2000   # run i of every framework uses seed 2000 + i

rm -rf "$WORK"
mkdir -p "$WORK/runs"
# No --user-conf: `levelfield infer` sizes the Offline query (expected_qps) from a measurement of
# this system, and sizes it again if a run still ends before the rules' 60 s.
"$LF" sysinfo --out "$WORK/example-box.json" --set submitter=$ORG --set division=closed --set status=available \
    --set system_type=datacenter --set "system_name=levelfield CI machine (2 vCPU)" > /dev/null
for fw in pytorch tensorflow jax; do
    "$LF" train --task $TASK --framework $fw --seed $SEED --system "$WORK/example-box.json" --org $ORG \
        --division closed --save-weights --out "$WORK/runs/$fw-training"
    weights=$(ls "$WORK/runs/$fw-training"/weights_*.npz | head -n 1)
    for mode in performance accuracy; do
        "$LF" infer --task $TASK --framework $fw --scenario offline --mode $mode --weights "$weights" \
            --out "$WORK/runs/$fw-offline-$mode"
    done
done
"$LF" package --runs "$WORK/runs" --system "$WORK/example-box.json" --org $ORG --division closed --out "$OUT" --force
"$LF" check "$OUT"
