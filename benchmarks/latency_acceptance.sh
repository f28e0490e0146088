#!/bin/sh
# Issue 13's acceptance figures in one command (run it on a quiet machine: `uptime` < 1.5).
#
#   sh benchmarks/latency_acceptance.sh [OUT_DIR] [BUDGET_MIN] [RUNS] [BASELINE_PREDICTOR]
#
# 1. calibrates this host (generated kernel chains only, no test model) within the budget;
# 2. predicts every corpus and real-model corpus model LiteRT runs, on XNNPACK with 1 and 2
#    threads and builtin kernels with 1 thread, and measures them, RUNS interleaved runs
#    (BASELINE_PREDICTOR, e.g. an earlier calibration's, is judged on the same measurements;
#    48 calibration chains timed again among the models tell the machine's drift since);
# 3. the table mode (profile each model, then predict it) on the same models, XNNPACK and
#    builtin kernels, 1 thread;
# 4. the Pixel 3 / Pixel 4 leave-one-model-out errors on TFLite's published figures;
# 5. refits the saved measurements twice and checks the predictor files are identical.
# Every step prints the load average; all outputs land in OUT_DIR.
set -eu
OUT=${1:-acceptance-out}
BUDGET=${2:-30}
RUNS=${3:-3}
BASELINE=${4:-}
mkdir -p "$OUT"
echo "load before: $(cat /proc/loadavg)"
python -m edgepart calibrate --host --budget "$BUDGET" -o "$OUT/host" --no-progress | tee "$OUT/calibrate.txt"
echo "load: $(cat /proc/loadavg)"
python benchmarks/fidelity.py --mode predictor --predictor "$OUT/host/host.predictor.json" \
    --runs "$RUNS" --probe "$OUT/host/host.measurements.npz" ${BASELINE:+--baseline "$BASELINE"} \
    --json "$OUT/predictor.json" \
    | tee "$OUT/predictor.txt"
echo "load: $(cat /proc/loadavg)"
python benchmarks/fidelity.py --mode table --models all --executors xnnpack,builtin \
    --threads 1 --runs 2 --json "$OUT/table.json" | tee "$OUT/table.txt"
echo "load: $(cat /proc/loadavg)"
python tools/fit_phone_profiles.py --check | tee "$OUT/phones.txt"
python -m edgepart calibrate --host --fit-only "$OUT/host/host.measurements.npz" \
    --predictor-out "$OUT/refit1.json" --no-progress > /dev/null
python -m edgepart calibrate --host --fit-only "$OUT/host/host.measurements.npz" \
    --predictor-out "$OUT/refit2.json" --no-progress > /dev/null
cmp "$OUT/refit1.json" "$OUT/refit2.json" && echo "refits identical: yes"
echo "load after: $(cat /proc/loadavg)"
