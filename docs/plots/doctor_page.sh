#!/bin/sh
# The skew report's page, as docs/doctor.md shows it: the differential
# example's join of Zipf-1.5 facts whose hot key moves half-way, on 8
# workers, rendered by headless Chromium (`apt-get install chromium`).
#
#   sh docs/plots/doctor_page.sh
#
# It writes docs/plots/doctor_page.png (and leaves the page and its JSON
# report in ${TMPDIR:-/tmp}).
set -eu
cd "$(dirname "$0")/../.."
out="${TMPDIR:-/tmp}/equipoise-doctor-page"
mkdir -p "$out"
cargo build --release --example differential
target/release/examples/differential --join --keys zipf:1.5:100000 \
    --epochs 40 --inserts 50000 --move-at 20 -w 8 --quiet \
    --doctor "$out/report.json" --doctor-html "$out/page.html" --doctor-period-ms 100
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --window-size=1500,1050 --screenshot="$out/page.png" "file://$out/page.html" 2>/dev/null
cp "$out/page.png" docs/plots/doctor_page.png
echo "docs/plots/doctor_page.png from $out/page.html"
