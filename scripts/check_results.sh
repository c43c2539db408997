#!/bin/bash
# Checks what `make compare` (QUICK=1 or not) left in results/<cpu>/:
#   - bench.json: valid Google Benchmark JSON, rows present, no failed row,
#     peak probes (FMA, read, triad), attention and micro-kernel rows for
#     every kernel set this CPU runs, and the OpenBLAS and oneDNN baselines
#     when the bench was built with them; every attention row with GFLOP/s
#     > 0 and a finite max abs error < 1e-2; no row above 100 % of the read
#     probe (the probe must report at least what any code reads)
#   - bench.csv: the header and one line per benchmark
#   - bench.md: the tables, and re-rendering bench.json gives the same text
#   - bench.png: a PNG (signature bytes)
#   - summary.csv (one-thread runs): exactly the documented header, one row
#     per (variant, algorithm, shape, threads), gbps on decode rows only, no
#     pct_bw above 100; after the default suite a row for every summary
#     shape, and 2-thread rows for the 8-head prefill, causal and both
#     decode shapes; limit.png a PNG
#   - accuracy.csv: the documented header, a line for every case, kernel set
#     this CPU runs (reference sets included) and algorithm, every error
#     finite and below 1e-2; and
#     accuracy.md with its tables and a row for every set
# Exits non-zero with the reasons otherwise.
#
# Usage: scripts/check_results.sh [--build DIR] [--out DIR] [--threads N]
set -euo pipefail
cd "$(dirname "$0")/.."

build=build out="" threads=1
while [ $# -gt 0 ]; do
  case "$1" in
  --build) build=$2; shift ;;
  --out) out=$2; shift ;;
  --threads) threads=$2; shift ;;
  *) echo "check_results: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done

bin=$build/bench/simdattn_bench
if [ ! -x "$bin" ]; then
  echo "check_results: FAIL: $bin is missing (was the bench built? libbenchmark-dev)" >&2
  exit 1
fi
slug=$("$bin" --sa_print=slug)
[ -n "$out" ] || out=results/$slug
tag=bench
[ "$threads" -gt 1 ] && tag=bench-t$threads
sets=$("$bin" --sa_print=sets | tr '\n' ' ')

fail=0
bad() { echo "check_results: FAIL: $*" >&2; fail=1; }

for ext in json csv md png; do
  [ -s "$out/$tag.$ext" ] || bad "$out/$tag.$ext is missing or empty"
done
[ "$fail" = 0 ] || exit 1

# JSON content, CSV rows
python3 - "$out/$tag.json" "$out/$tag.csv" "$sets" <<'EOF' || fail=1
import csv, json, math, re, sys
path, csv_path, sets = sys.argv[1], sys.argv[2], sys.argv[3].split()
problems = []
try:
    data = json.load(open(path, encoding="utf-8"))
except Exception as e:
    print(f"check_results: FAIL: {path} is not valid JSON: {e}", file=sys.stderr)
    sys.exit(1)
rows = data.get("benchmarks") or []
if not rows:
    problems.append(f"{path} has no benchmarks")
strip = lambda n: re.sub(r"(/(min_time|repeats|iterations|threads):[^/]*)*"
                         r"(/(process_time|real_time))?$", "", n)
names = {strip(r.get("run_name") or r["name"]) for r in rows}
for r in rows:
    if r.get("error_occurred"):
        problems.append(f"{r['name']} failed: {r.get('error_message')}")
if not any(n.startswith("peak/fma/") for n in names):
    problems.append("no peak/fma probe row")
for probe in ("read", "triad"):
    if not any(n.startswith(f"peak/{probe}/") for n in names):
        problems.append(f"no peak/{probe} probe row")
for s in sets:
    if s in ("openblas", "onednn"):
        if not any(n.startswith(f"attn/gemm/{s}/") for n in names):
            problems.append(f"no attn/gemm/{s} row although the bench has it")
        continue
    for algo in ("three_pass", "fused"):
        if not any(n.startswith(f"attn/{algo}/{s}/") for n in names):
            problems.append(f"no attn/{algo}/{s}/ row for runnable set {s}")
    for op in ("score", "softmax", "softmax_online", "softmax_online2",
               "wsum", "score_upto", "wsum_upto"):
        if not any(n.startswith(f"kernel/{op}/{s}/") for n in names):
            problems.append(f"no kernel/{op}/{s}/ row for runnable set {s}")
medians = [r for r in rows if r["name"].startswith("attn/") and
           (r.get("aggregate_name") == "median" or r.get("run_type") == "iteration")]
for r in medians:
    g, e = r.get("GFLOPS"), r.get("max_abs_err")
    if not g or g <= 0:
        problems.append(f"{r['name']}: no GFLOPS")
    if e is None or not math.isfinite(e) or e >= 1e-2:
        problems.append(f"{r['name']}: max_abs_err {e} vs the scalar set")
try:
    with open(csv_path, newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            if r.get("pct_peak_bw") and float(r["pct_peak_bw"]) > 100:
                problems.append(f"{r['name']}: {float(r['pct_peak_bw']):.1f}% of the "
                                "read probe: the probe reads less than this row")
except (OSError, ValueError) as e:
    problems.append(f"{csv_path}: {e}")
try:
    with open(csv_path, newline="", encoding="utf-8") as f:
        table = list(csv.reader(f))
    if not table or table[0][:3] != ["cpu", "cpu_model", "threads"]:
        problems.append(f"{csv_path}: unexpected header")
    elif len(table) - 1 < len(names):
        problems.append(f"{csv_path}: {len(table) - 1} lines for {len(names)} benchmarks")
except OSError as e:
    problems.append(f"{csv_path}: {e}")
for p in problems:
    print(f"check_results: FAIL: {p}", file=sys.stderr)
print(f"check_results: {path}: {len(names)} benchmarks, sets {' '.join(sets)}")
sys.exit(1 if problems else 0)
EOF

# summary.csv and limit.png: written by a one-thread make compare (with its
# second, multi-thread pass).
if [ "$threads" = 1 ]; then
  for f in summary.csv limit.png; do
    [ -s "$out/$f" ] || bad "$out/$f is missing or empty"
  done
fi
if [ "$threads" = 1 ] && [ -s "$out/summary.csv" ]; then
  python3 - "$out/summary.csv" "$out/$tag.json" <<'EOF' || fail=1
import csv, json, sys
path, bench = sys.argv[1], sys.argv[2]
header = ("variant,algorithm,shape,batch,heads_q,heads_kv,len_q,len_kv,dim,causal,"
          "threads,gflops,pct_peak,gbps,pct_bw,ratio_openblas,ratio_onednn,"
          "max_abs_err")
problems = []
with open(path, newline="", encoding="utf-8") as f:
    lines = f.read().splitlines()
if not lines or lines[0] != header:
    problems.append(f"{path}: header is not {header}")
rows = list(csv.DictReader(lines))
seen = {(r["shape"], r["threads"]) for r in rows}
keys = [(r["variant"], r["algorithm"], r["shape"], r["threads"]) for r in rows]
if len(set(keys)) != len(keys):
    problems.append(f"{path}: a (variant, algorithm, shape, threads) twice")
for r in rows:
    if r["pct_bw"] and float(r["pct_bw"]) > 100:
        problems.append(f"{path}: {r['variant']} {r['algorithm']} {r['shape']} "
                        f"{r['threads']}T at {r['pct_bw']}% of the read probe")
    if r["shape"].startswith("decode") != bool(r["gbps"]):
        problems.append(f"{path}: {r['shape']}: gbps must be given for decode only")
suite = json.load(open(bench, encoding="utf-8")).get("context", {}).get("sa_suite")
if suite == "default":
    want = [f"prefill-L{l}-d{d}" for l in (512, 2048, 4096) for d in (64, 128)]
    want += ["prefill-L2048-d128-h8", "prefill-L2048-d128-h32",
             "causal-L2048-d128-h8", "decode-L4096-h32-kv8", "decode-L4096-h32-mha",
             "cross-Lq77-L4096"]
    for s in want:
        if (s, "1") not in seen:
            problems.append(f"{path}: no 1-thread row for {s}")
    for s in ("prefill-L2048-d128-h8", "causal-L2048-d128-h8",
              "decode-L4096-h32-kv8", "decode-L4096-h32-mha"):
        if (s, "2") not in seen:
            problems.append(f"{path}: no 2-thread row for {s}")
elif not rows:
    problems.append(f"{path}: no rows")
for p in problems[:20]:
    print(f"check_results: FAIL: {p}", file=sys.stderr)
print(f"check_results: {path}: {len(rows)} rows, {len(seen)} (shape, threads)")
sys.exit(1 if problems else 0)
EOF
fi

# Markdown: the tables, and the renderer reproduces them from the JSON.
grep -q '^| shape | variant |' "$out/$tag.md" || bad "$out/$tag.md has no attention table"
grep -q '^| kernel | tile | set |' "$out/$tag.md" || bad "$out/$tag.md has no micro-kernel table"
for s in $sets; do
  grep -q "| [a-z_]* $s |" "$out/$tag.md" || bad "$out/$tag.md has no row for $s"
done
if ! python3 tools/render.py --quiet "$out/$tag.json" >/dev/null; then
  bad "tools/render.py cannot render $out/$tag.json"
elif ! python3 tools/render.py "$out/$tag.json" | cmp -s - "$out/$tag.md"; then
  bad "re-rendering $out/$tag.json does not reproduce $out/$tag.md"
fi

# The accuracy table (bench/accuracy.c): every runnable set, both algorithms,
# every case the CSV names, and sane numbers.
accuracy=$build/bench/simdattn_accuracy
[ -x "$accuracy" ] || bad "$accuracy is missing"
for f in accuracy.csv accuracy.md; do
  [ -s "$out/$f" ] || bad "$out/$f is missing or empty"
done
if [ -x "$accuracy" ] && [ -s "$out/accuracy.csv" ]; then
  acc_sets=$("$accuracy" --list | tr '\n' ' ')
  python3 - "$out/accuracy.csv" "$acc_sets" <<'EOF' || fail=1
import csv, math, sys
path, sets = sys.argv[1], sys.argv[2].split()
header = ("cpu,case,heads_q,heads_kv,len_q,len_kv,dim_qk,dim_v,mask,logit,set,"
          "algorithm,max_abs_err,max_rel_err,plain_max_abs_err,"
          "plain_max_rel_err,max_abs_ref").split(",")
problems = []
with open(path, newline="", encoding="utf-8") as f:
    table = list(csv.reader(f))
if not table or table[0] != header:
    problems.append(f"{path}: header is not {','.join(header)}")
    table = [header]
rows = [dict(zip(header, r)) for r in table[1:]]
cases = sorted({r["case"] for r in rows})
if len(cases) < 6:
    problems.append(f"{path}: only {len(cases)} cases ({', '.join(cases)})")
seen = {(r["case"], r["set"], r["algorithm"]) for r in rows}
for c in cases:
    for s in sets:
        for a in ("fused", "three_pass"):
            if (c, s, a) not in seen:
                problems.append(f"{path}: no line for case '{c}', set {s}, {a}")
for r in rows:
    for k in ("max_abs_err", "max_rel_err", "plain_max_abs_err",
              "plain_max_rel_err"):
        try:
            v = float(r[k])
        except ValueError:
            v = math.nan
        if not math.isfinite(v) or v < 0 or v >= 1e-2:
            problems.append(f"{path}: {r['case']} {r['set']} {r['algorithm']}: "
                            f"{k} = {r[k]}")
for p in problems[:20]:
    print(f"check_results: FAIL: {p}", file=sys.stderr)
print(f"check_results: {path}: {len(rows)} lines, {len(cases)} cases")
sys.exit(1 if problems else 0)
EOF
  grep -q '^| set | algorithm |' "$out/accuracy.md" || bad "$out/accuracy.md has no table"
  for s in $acc_sets; do
    grep -q "^| $s | fused |" "$out/accuracy.md" || bad "$out/accuracy.md has no row for $s"
  done
fi

# PNG signature: 89 50 4E 47 0D 0A 1A 0A
sig=$(head -c 8 "$out/$tag.png" | od -An -tx1 | tr -d ' \n')
[ "$sig" = "89504e470d0a1a0a" ] || bad "$out/$tag.png is not a PNG (starts with $sig)"
if [ "$threads" = 1 ] && [ -s "$out/limit.png" ]; then
  sig=$(head -c 8 "$out/limit.png" | od -An -tx1 | tr -d ' \n')
  [ "$sig" = "89504e470d0a1a0a" ] || bad "$out/limit.png is not a PNG (starts with $sig)"
fi

if [ "$fail" != 0 ]; then
  exit 1
fi
summary=""
[ "$threads" = 1 ] && summary=", $out/summary.csv, $out/limit.png"
echo "check_results: OK: $out/$tag.{json,csv,md,png}$summary and $out/accuracy.{csv,md}"
