#!/usr/bin/env bash
# `make test`'s stages, timed: runs `make STAGE` for each argument in
# order, prints a timestamped line as each starts and ends, and at the end
# (or at the first failure) a table of the seconds each took and the tests
# it ran, so every CI log says where its time went (docs/testing.md holds
# today's table). Each stage's output also goes to target/stages/STAGE.log,
# where the test counts are read from the runners' own closing lines.
set -uo pipefail
cd "$(dirname "$0")/.."
logs=target/stages
mkdir -p "$logs"
names=() secs=() counts=()
start_all=$(date +%s)

stamp() { date -u +%H:%M:%S; }

# The tests a stage's log says it ran: cargo test's and nextest's closing
# lines, Playwright's "N passed", compose-test's own line; empty if none.
count_tests() {
  local log=$1
  python3 - "$log" <<'EOF'
import re, sys
text = open(sys.argv[1], errors="replace").read()
passed = failed = 0
found = False
# cargo test's own lines start the line; nextest repeats a failed test's
# output indented, which must not count it twice.
for m in re.finditer(r"^test result: \w+\. (\d+) passed; (\d+) failed", text, re.M):
    passed += int(m[1]); failed += int(m[2]); found = True
for m in re.finditer(r"Summary \[.*?\]\s+(\d+) tests? run: (\d+) passed(?:.*?(\d+) failed)?", text):
    passed += int(m[2]); failed += int(m[3] or 0); found = True
for m in re.finditer(r"^\s*(\d+) passed \(", text, re.M):
    passed += int(m[1]); found = True
for m in re.finditer(r"^\s*(\d+) failed$", text, re.M):
    failed += int(m[1])
for m in re.finditer(r"^[\w-]+: (\d+) passed, (\d+) failed$", text, re.M):
    passed += int(m[1]); failed += int(m[2]); found = True
if found:
    print(f"{passed} passed, {failed} failed")
EOF
}

table() {
  local i total=$(( $(date +%s) - start_all ))
  printf '\n%-16s %8s  %s\n' stage seconds tests
  for i in "${!names[@]}"; do
    printf '%-16s %8s  %s\n' "${names[$i]}" "${secs[$i]}" "${counts[$i]}"
  done
  printf '%-16s %8s\n' total "$total"
}

for stage in "$@"; do
  echo "==> [$(stamp)] stage $stage starts"
  t0=$(date +%s)
  make --no-print-directory "$stage" 2>&1 | tee "$logs/$stage.log"
  rc=${PIPESTATUS[0]}
  t=$(( $(date +%s) - t0 ))
  names+=("$stage") secs+=("$t") counts+=("$(count_tests "$logs/$stage.log")")
  if (( rc != 0 )); then
    echo "==> [$(stamp)] stage $stage FAILED after ${t} s"
    table
    exit "$rc"
  fi
  echo "==> [$(stamp)] stage $stage done in ${t} s"
done
table
