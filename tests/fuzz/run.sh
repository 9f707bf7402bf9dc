#!/usr/bin/env bash
# Runs each libFuzzer target of tests/fuzz for a while, starting from its
# seed corpus in tests/fuzz/<target>/. New inputs go to BUILD/corpus/<target>/,
# never into the source tree; a failing input is saved as
# BUILD/artifacts/<target>-crash-… and the run fails. To keep a new input as
# a seed, copy it into tests/fuzz/<target>/ (or minimise the lot with
# BUILD/tests/fuzz/fuzz_<target> -merge=1 tests/fuzz/<target> BUILD/corpus/<target>).
#
#   tests/fuzz/run.sh [--build DIR] [--seconds N] [TARGET…]
#
# Defaults: build-fuzz/, 300 s per target (make fuzz; FUZZ_SECONDS), all targets.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build-fuzz
seconds=300
targets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    -*) echo "run.sh: unknown option $1" >&2; exit 64 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[[ ${#targets[@]} -gt 0 ]] || targets=(resource duration owner_id config database_url)

# The longest input worth trying per target: a name is at most 255 bytes.
declare -A max_len=([resource]=300 [duration]=64 [owner_id]=64 [config]=4096 [database_url]=512)

failed=()
for target in "${targets[@]}"; do
  binary=$build/tests/fuzz/fuzz_$target
  [[ -x $binary ]] || { echo "run.sh: $binary is missing: make build-fuzz" >&2; exit 1; }
  corpus=$build/corpus/$target
  mkdir -p "$corpus" "$build/artifacts"
  dict=()
  [[ -f tests/fuzz/$target.dict ]] && dict=(-dict="tests/fuzz/$target.dict")
  echo "==> fuzz_$target for ${seconds}s"
  # -print_final_stats: runs and coverage at the end; the log of each run in
  # BUILD/fuzz-<target>.log.
  if "$binary" -max_total_time="$seconds" -max_len="${max_len[$target]:-1024}" -timeout=10 \
      -artifact_prefix="$build/artifacts/$target-" -print_final_stats=1 "${dict[@]}" \
      "$corpus" "tests/fuzz/$target" >"$build/fuzz-$target.log" 2>&1; then
    grep -E '^stat::number_of_executed_units|^Done|cov:' "$build/fuzz-$target.log" | tail -2
  else
    echo "run.sh: fuzz_$target FAILED; see $build/fuzz-$target.log and $build/artifacts/" >&2
    grep -E 'property violated|ERROR: |SUMMARY' "$build/fuzz-$target.log" | head -5 >&2 || true
    failed+=("$target")
  fi
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "run.sh: failed: ${failed[*]}" >&2
  exit 1
fi
