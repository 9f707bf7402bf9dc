#!/usr/bin/env bash
# build_release.sh TAG OUT_DIR
#
# Builds the clock binary and its modules of release TAG (e.g. v1.0.0) from
# this repository's own history into OUT_DIR/bin, for the upgrade test to
# run beside the binary under test. The tag's commit comes from the tag, or
# from packaging/releases.txt when a clone lacks the tag. A finished build
# of that commit in OUT_DIR is reused as it is (OUT_DIR/bin/commit says
# which); otherwise its sources are checked out with `git worktree add`
# and built with the tests off and only the targets needed, through ccache
# when the environment sets it up (CMAKE_CXX_COMPILER_LAUNCHER).
set -euo pipefail

tag=$1
out=$2
repo=$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)

commit=$(git -C "$repo" rev-parse --verify --quiet "$tag^{commit}" || true)
if [[ -z $commit ]]; then
  commit=$(awk -v tag="$tag" '$1 == tag { print $2 }' "$repo/packaging/releases.txt")
  git -C "$repo" cat-file -e "$commit^{commit}" 2>/dev/null || {
    echo "build_release.sh: neither tag $tag nor its commit in packaging/releases.txt" \
         "('$commit') is in this clone: fetch the tags (git fetch --tags)" >&2
    exit 1
  }
fi

if [[ -x $out/bin/clock && $(cat "$out/bin/commit" 2>/dev/null) == "$commit" ]]; then
  exit 0
fi

mkdir -p "$out"
src=$out/src
if [[ ! -d $src/.git && ! -f $src/.git ]]; then
  git -C "$repo" worktree prune
  git -C "$repo" worktree add --force --detach "$src" "$commit" >/dev/null
else
  git -C "$src" checkout --quiet --detach "$commit"
fi

# The build is unoptimised and without debug information (build type None),
# in unity batches (release_unity.cmake says which files compile alone): the
# old release only has to run a handful of commands, and on 2 cores it
# builds in about 1.5 minutes this way, against 3 file by file and 10 or
# more at -O2 -g, which a clean clone (CI, no ccache yet) pays in full.
build=$src/build
gen=()
if [[ ! -f $build/CMakeCache.txt ]] && command -v ninja >/dev/null; then gen=(-G Ninja); fi
cmake -S "$src" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=None \
  -DCLOCK_BUILD_TESTS=OFF -DENABLE_SANITIZERS=OFF \
  -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 \
  -DCMAKE_PROJECT_INCLUDE="$repo/tests/upgrade/release_unity.cmake" >/dev/null
cmake --build "$build" -j"$(nproc)" --target clock clock_postgres clock_mariadb >/dev/null

rm -rf "$out/bin"
mkdir -p "$out/bin"
cp "$build/clock" "$build/clock-postgres.so" "$build/clock-mariadb.so" "$out/bin/"
echo "$commit" >"$out/bin/commit"
