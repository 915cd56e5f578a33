#!/bin/bash
# One device loan's cluster measurements (issue: four processes at the
# speed of one): 2 and 4 processes × 1, 2 and 4 workers against one process
# of the same total workers, every example beside timely's own baseline.
#
# Prepare here:
#   cargo build --release --examples --bench cluster
#   mkdir -p device-bin && cp target/release/examples/{wordcount,differential,spatial} device-bin/
#   cp "$(ls -t target/release/deps/cluster-* | grep -v '\.d$' | head -1)" device-bin/cluster
# Then run with `carry: ["device-bin"]`: bash bench/device/cluster.sh
# It writes $OUT/cluster.md (the table) and $OUT/cluster.json (every run),
# and stops itself before the loan's 10-minute command limit.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
{ nproc; uname -a; } > "$OUT/machine.txt"
run() {
    timeout "$1" ./device-bin/cluster --bin-dir device-bin --runs 3 --timeout-s 60 \
        --examples wordcount,differential,spatial "${@:2}" 2>>"$OUT/stderr.txt"
}
{
    # The shape the issue targets first: 4 × 4 against 1 × 16, then the rest.
    run 240 --processes 4 --workers 4 --json "$OUT/cluster-4x4.json"
    run 150 --processes 2 --workers 1,2,4 --json "$OUT/cluster-2.json"
    run 150 --processes 4 --workers 1,2 --json "$OUT/cluster-4.json"
} | tee "$OUT/cluster.md"
