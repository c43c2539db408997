#!/bin/sh
# make compare: benchmark every kernel set this CPU runs (and the OpenBLAS
# and oneDNN baselines), print a Markdown table, and write results/<cpu>/:
#   bench.json  the raw Google Benchmark JSON (all groups of the run joined)
#   bench.csv   one line per benchmark, every derived column
#   bench.md    the table printed here
#   bench.png   GFLOP/s per variant and shape (gnuplot)
#   bench-t2.*  the same for the second pass: the summary's multi-thread
#               shapes (8-head prefill, causal, both decodes) and the
#               split-KV MQA decode on 2 threads
#   summary.csv one line per (variant, algorithm, shape, threads) of the
#               summary shapes, both passes (schema in README.md)
#   limit.png   % of the measured peak / read bandwidth per summary shape
#   serving.md  the serving-layout rows against their lines (paged and
#               contiguous decode, varlen against separate and padded
#               calls, split-KV on one thread and on the second pass's)
#   accuracy.md, accuracy.csv  every set's error against double precision
#               beside plain fp32 (bench/accuracy.c; `make accuracy` alone)
# With --threads N (N > 1) there is one pass, on N threads, whose files are
# bench-tN.*, and no summary (the accuracy table does not depend on the
# thread count).
#
# Usage: scripts/compare.sh [--quick] [--threads N] [--mt-threads N] [--reps N]
#                           [--min-time S] [--filter REGEX] [--build DIR]
#                           [--out DIR]
#   --quick      the tiny suite (about a minute), and the accuracy sweep's short rows
#   --threads N  worker threads per context and for the baselines (default 1)
#   --mt-threads N  threads of the second pass (2; 0: no second pass)
#   --reps N     repetitions per benchmark, the table shows the median (3)
#   --min-time S minimum time per repetition, seconds (0.05; quick 0.01)
#   --filter RE  only benchmarks whose name matches RE (peaks always run)
#
# The bench binary runs once per group (the peak probes, each micro-kernel,
# each attention shape), so progress shows as rows finish; the peaks measured
# first are handed to the later groups (--sa_peak) so every "% of peak"
# counter refers to the same measurement as the table.
set -eu
cd "$(dirname "$0")/.."

quick=0 threads=1 mt_threads=2 reps=3 min_time="" filter="" build=build out=""
while [ $# -gt 0 ]; do
  case "$1" in
  --quick) quick=1 ;;
  --threads) threads=$2; shift ;;
  --threads=*) threads=${1#*=} ;;
  --mt-threads) mt_threads=$2; shift ;;
  --reps) reps=$2; shift ;;
  --min-time) min_time=$2; shift ;;
  --filter) filter=$2; shift ;;
  --build) build=$2; shift ;;
  --out) out=$2; shift ;;
  -h|--help) sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "compare: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
case "$threads" in ''|*[!0-9]*|0) echo "compare: --threads needs a positive number" >&2; exit 2 ;; esac
case "$reps" in ''|*[!0-9]*|0) echo "compare: --reps needs a positive number" >&2; exit 2 ;; esac
case "$mt_threads" in ''|*[!0-9]*) echo "compare: --mt-threads needs a number" >&2; exit 2 ;; esac

bin=$build/bench/simdattn_bench
accuracy=$build/bench/simdattn_accuracy
if [ ! -x "$bin" ] || [ ! -x "$accuracy" ]; then
  echo "compare: $bin or $accuracy is missing. Build with Google Benchmark (libbenchmark-dev):" >&2
  echo "  make compare   (or cmake -S . -B $build -DSA_BUILD_BENCH=ON && cmake --build $build)" >&2
  exit 1
fi
command -v python3 >/dev/null || { echo "compare: python3 is needed to render" >&2; exit 1; }

if [ "$quick" = 1 ]; then
  suite=quick
  : "${min_time:=0.01}"
else
  suite=default
  : "${min_time:=0.05}"
fi
# Google Benchmark 1.8 wants a unit on --benchmark_min_time ("0.05s").
gbench=$("$bin" --sa_print=context | sed -n 's/^sa_version_gbench=//p')
case "$gbench" in
1.[0-7].*|1.[0-7]) min_time_flag=$min_time ;;
*) min_time_flag=${min_time}s ;;
esac
slug=$("$bin" --sa_suite=$suite --sa_print=slug)
[ -n "$slug" ] || { echo "compare: the bench binary gave no CPU name" >&2; exit 1; }
[ -n "$out" ] || out=results/$slug
sets=$("$bin" --sa_print=sets | tr '\n' ' ')
# The second pass: the summary's multi-thread shapes and the split-KV MQA
# decode (bench names; quick: their small stand-ins), only after a
# one-thread first pass.
if [ "$quick" = 1 ]; then
  mt_filter='^attn/[^/]+/[^/]+/(L256_d64_h2|L256_d64_h2_causal|decode_Lk1024_d64_h8kv2)(/|$)'
else
  mt_filter='^attn/[^/]+/[^/]+/(L2048_d128_h8|L2048_d128_h8_causal|decode_Lk4096_d128_h32kv8|decode_Lk4096_d128_h32kv32|decode_Lk32768_d128_h32kv1)(/|$)'
fi
[ "$threads" -gt 1 ] && mt_threads=0
# A failed run must not leave the previous run's files looking current.
mkdir -p "$out"
rm -f "$out"/bench*.json "$out"/bench*.csv "$out"/bench*.md "$out"/bench*.png \
  "$out/summary.csv" "$out/limit.png" "$out/serving.md" "$out/accuracy.md" \
  "$out/accuracy.csv"
start=$(date +%s)
total_rows=0

# probe_again FILE: the read probe run again into FILE (a part of the pass,
# merged with the others), when the pass has one.
probe_again() {
  grep -q '^peak/read/' "$parts/names" || return 0
  "$bin" $args --benchmark_filter='^peak/read/' \
    --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
    --benchmark_min_time="$min_time_flag" \
    --benchmark_out="$1" --benchmark_out_format=json \
    </dev/null >/dev/null 2>"$1.err" || {
    echo "compare: a second read probe failed:" >&2
    tail -n 20 "$1.err" >&2
    exit 1
  }
  echo "  read probe again: $(python3 tools/render.py --peak-flag "$1" | sed 's/.*mem:/mem /') GB/s"
}

# run_pass THREADS FILTER: one pass of the bench on THREADS threads over the
# benchmarks FILTER matches (peaks always), written to $out/<tag>.*.
run_pass() {
  threads=$1 filter=$2
  args="--sa_suite=$suite --sa_threads=$threads"
  tag=bench
  [ "$threads" -gt 1 ] && tag=bench-t$threads
  parts=$out/.parts-$tag
  rm -rf "$parts"
  mkdir -p "$parts"

  # The groups, in registration order: peak, kernel/<op>, attn/<shape>; each
  # runs with a filter naming its benchmarks exactly (names are [a-z0-9_/x-]).
  "$bin" $args --benchmark_list_tests=true 2>/dev/null |
    sed -E 's#/(process_time|real_time)$##' >"$parts/names"
  if [ -n "$filter" ]; then
    grep -E "^peak/|$filter" "$parts/names" >"$parts/names.f" || true
    mv "$parts/names.f" "$parts/names"
  fi
  awk -F/ '{
    if ($1 == "peak") g = "peak";
    else if ($1 == "kernel") g = "kernel " $2;
    else if ($1 == "attn") g = "attn " $4;
    else g = $1;
    if (!(g in count)) order[n++] = g;
    count[g]++;
    if (count[g] == 1) re[g] = $0; else re[g] = re[g] "|" $0;
  }
  END { for (i = 0; i < n; i++) printf "%s\t%d\t^(%s)(/|$)\n", order[i], count[order[i]], re[order[i]] }
  ' "$parts/names" >"$parts/groups"
  total=$(wc -l <"$parts/names" | tr -d ' ')
  ngroups=$(wc -l <"$parts/groups" | tr -d ' ')

  echo "simdattn compare: $total benchmarks in $ngroups groups ($suite suite, $threads thread(s),"
  echo "  median of $reps repetitions, min time ${min_time}s); sets: $sets"
  echo "  CPU: $slug -> $out/$tag.*"

  done_rows=0
  gi=0
  peak_flag=""
  tab=$(printf '\t')
  while IFS="$tab" read -r group n regex; do
    gi=$((gi + 1))
    kind=${group%% *}
    file=$(printf '%s/%02d.json' "$parts" "$gi")
    printf '  -- group %d/%d: %s (%s benchmarks)\n' "$gi" "$ngroups" "$group" "$n"
    {
      "$bin" $args $peak_flag --benchmark_filter="$regex" \
        --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
        --benchmark_min_time="$min_time_flag" \
        --benchmark_out="$file" --benchmark_out_format=json </dev/null 2>"$file.err"
      echo "__rc $?"
    } | awk -v done="$done_rows" -v total="$total" -v start="$start" '
      /^__rc / { rc = $2; next }
      {
        name = $1
        if (name !~ /^(peak|kernel|attn|pair)\//) next
        base = name
        sub(/_(mean|median|stddev|cv|max)$/, "", base)
        if (name != base && name !~ /_median$/) next
        if (base in seen) next
        seen[base] = 1
        done++
        sub(/\/(process_time|real_time)$/, "", base)
        sub(/\/min_time:[^\/]*/, "", base)
        sub(/\/repeats:[0-9]*/, "", base)
        sub(/\/iterations:[0-9]*/, "", base)
        n = split(base, p, "/")
        what = base
        if (p[1] == "attn") what = sprintf("attn %-10s %-15s %s", p[2], p[3], p[4])
        else if (p[1] == "kernel") what = sprintf("kernel %-14s %-15s %s", p[2], p[3], p[4])
        else if (p[1] == "pair") what = sprintf("pair %-15s %s", p[2], p[3])
        val = ""
        if ($0 ~ /ERROR OCCURRED/) val = "ERROR: " substr($0, index($0, "ERROR OCCURRED"))
        for (i = 2; i <= NF; i++) {
          if ($i ~ /^GFLOPS=/ && val == "") { v = $i; sub(/^GFLOPS=/, "", v); sub(/\/s$/, "", v); val = v " GFLOP/s" }
          if ($i ~ /^items_per_second=/ && val == "") { v = $i; sub(/^items_per_second=/, "", v); val = v " elem" }
          if ($i ~ /^GBps=/ && p[1] == "peak") { v = $i; sub(/^GBps=/, "", v); sub(/\/s$/, "", v); val = v " GB/s" }
          if ($i ~ /^ratio=/) { v = $i; sub(/^ratio=/, "", v); val = v "x" }
        }
        "date +%s" | getline now; close("date +%s")
        printf "[%3d/%d] %-62s %s  (%ds)\n", done, total, what, val, now - start
        fflush()
      }
      END { print done > "/dev/stderr"; exit rc }' 2>"$parts/count" || {
      rc=$?
      echo "compare: the bench binary failed in group '$group' (exit $rc):" >&2
      tail -n 20 "$file.err" >&2
      exit 1
    }
    done_rows=$(tail -n 1 "$parts/count")
    if [ "$kind" = peak ]; then
      peak_flag=$(python3 tools/render.py --peak-flag "$file")
    fi
    # decode rows read memory as the probe does, and this machine's
    # bandwidth drifts by the minute: a probe right after them (0.11.1: a
    # two-thread MHA decode row read 40 GB/s where the pass's probes, before
    # and after all the rows, read 29-31)
    case "$group" in
    *decode*) probe_again "$(printf '%s/%02dp.json' "$parts" "$gi")" ;;
    esac
  done <"$parts/groups"

  # The read probe once more, after the attention rows (and after each
  # group of decode rows, above): a probe measured in a slow minute of a
  # shared machine would otherwise put rows above 100 % of it; the render
  # takes the best repetition of all its runs.
  probe_again "$parts/99.json"

  python3 tools/render.py --merge "$out/$tag.json" "$parts"/[0-9]*.json
  echo
  python3 tools/render.py --out "$out/$tag" "$out/$tag.json" || {
    echo "compare: rendering failed (is gnuplot-nox installed?)" >&2
    exit 1
  }
  echo
  total_rows=$((total_rows + done_rows))
  rm -rf "$parts"
}

run_pass "$threads" "$filter"
files="$out/$tag.{json,csv,md,png}"
if [ "$mt_threads" -gt 0 ]; then
  run_pass "$mt_threads" "$mt_filter"
  files="$files, $out/$tag.{json,csv,md,png}"
  python3 tools/render.py --summary "$out" "$out/bench.json" "$out/$tag.json" || {
    echo "compare: writing summary.csv or limit.png failed" >&2
    exit 1
  }
  files="$files, $out/summary.csv, $out/limit.png"
  [ -f "$out/serving.md" ] && files="$files, $out/serving.md"
fi
elapsed=$(( $(date +%s) - start ))
acc_flag=""
[ "$quick" = 1 ] && acc_flag=--quick
"$accuracy" $acc_flag --out "$out" || {
  echo "compare: the accuracy table failed (exit $?)" >&2
  exit 1
}
echo
echo "compare: $total_rows benchmarks in ${elapsed}s. Wrote $files"
echo "  (bench*.json: raw Google Benchmark JSON), $out/accuracy.md, $out/accuracy.csv."
echo "  Re-render or merge CPUs: python3 tools/render.py --out comparison results/*/bench.json"
