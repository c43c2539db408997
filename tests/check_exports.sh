#!/bin/sh
# Usage: check_exports.sh LIBRARY HEADER
#
# Exports = the header: the dynamic symbols LIBRARY defines must be exactly the
# functions HEADER declares with SA_API. Anything more is an internal symbol a
# caller could come to depend on; anything less is a declared function that
# links against the static library but not the shared one.
#
# NM names the nm to use: the host's reads AArch64 ELF too (binutils' generic
# elf64-little target), but CMake hands over the toolchain's CMAKE_NM anyway.
set -eu

if [ $# -ne 2 ]; then
  echo "usage: $0 LIBRARY HEADER" >&2
  exit 2
fi
lib=$1
header=$2
nm=${NM:-nm}
for f in "$lib" "$header"; do
  if [ ! -r "$f" ]; then
    echo "check_exports: cannot read $f" >&2
    exit 2
  fi
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM

# The header, read as C rather than line by line: clang-format may put the
# return type and the name on different lines and break argument lists. So
# drop comments and preprocessor lines (the SA_API definition is one), join
# everything, cut at ; { and }, and from each piece that says SA_API take the
# first identifier followed by "(" once "(*" groupings are gone (so a function
# returning a function pointer gives its own name), or failing that the last
# identifier before any "[" (a variable).
awk '
  { text = text $0 "\n" }
  END {
    gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, " ", text)
    n = split(text, lines, "\n")
    flat = ""; cont = 0
    for (i = 1; i <= n; i++) {
      line = lines[i]
      sub(/\/\/.*/, "", line)
      if (cont || line ~ /^[ \t]*#/) {
        cont = (line ~ /\\[ \t]*$/)
        continue
      }
      flat = flat " " line
    }
    gsub(/"([^"\\]|\\.)*"/, "\"\"", flat)
    m = split(flat, pieces, /[;{}]/)
    for (i = 1; i <= m; i++) {
      p = " " pieces[i] " "
      if (p !~ /[^A-Za-z0-9_]SA_API[^A-Za-z0-9_]/)
        continue
      gsub(/\([ \t]*\*/, " *", p)
      if (match(p, /[A-Za-z_][A-Za-z0-9_]*[ \t]*\(/)) {
        name = substr(p, RSTART, RLENGTH)
        sub(/[ \t]*\($/, "", name)
      } else {
        sub(/\[.*/, "", p)
        if (!match(p, /[A-Za-z_][A-Za-z0-9_]*[ \t]*$/))
          continue
        name = substr(p, RSTART, RLENGTH)
        sub(/[ \t]+$/, "", name)
      }
      print name
    }
  }
' "$header" | LC_ALL=C sort -u >"$tmp/declared"

# Every defined dynamic symbol but those the toolchain adds on its own: version
# nodes (type A) and the _init/_fini/_edata/_end/__bss_start family. Data is
# kept on purpose: an exported variable is as much a leak as a function.
"$nm" -D --defined-only "$lib" >"$tmp/nm"
awk '
  NF >= 2 {
    type = $(NF - 1); name = $NF
    sub(/@.*/, "", name)
    if (type == "A") next
    if (name ~ /^(_init|_fini|_edata|_end|__bss_start|_DYNAMIC|_GLOBAL_OFFSET_TABLE_)$/) next
    print name
  }
' "$tmp/nm" | LC_ALL=C sort -u >"$tmp/exported"

if [ ! -s "$tmp/declared" ]; then
  echo "check_exports: found no SA_API declaration in $header" >&2
  exit 1
fi

LC_ALL=C comm -23 "$tmp/exported" "$tmp/declared" >"$tmp/extra"
LC_ALL=C comm -13 "$tmp/exported" "$tmp/declared" >"$tmp/missing"
if [ -s "$tmp/extra" ] || [ -s "$tmp/missing" ]; then
  if [ -s "$tmp/extra" ]; then
    echo "check_exports: $lib exports what $header does not declare:"
    sed 's/^/  + /' "$tmp/extra"
  fi
  if [ -s "$tmp/missing" ]; then
    echo "check_exports: $header declares what $lib does not export:"
    sed 's/^/  - /' "$tmp/missing"
  fi
  exit 1
fi
count=$(wc -l <"$tmp/declared" | tr -d ' ')
echo "check_exports: $count exported functions = $count declared"
