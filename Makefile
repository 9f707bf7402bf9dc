# The usual entry points, for people and for CI (.ci/run is `make check`).
# The build itself is CMake's (CMakeLists.txt); this file only names the steps.
#
#   make deps          install the missing Debian packages for building and testing,
#                      saying which and why first (packaging/install-deps.sh)
#   make build         release build with debug info and Debian's hardening flags, in build/
#   make build-asan    ASan + UBSan build, in build-asan/
#   make demo          install only what building clock needs, build only clock (in
#                      build-demo/, no tests), then run a real job under a lock
#                      on SQLite and show it held (packaging/demo.sh)
#   make test          the quick lane, for every change: build/ only (no ASan, no
#                      fuzzing, no package), then the unit tests (and the
#                      SQL routine catalogue's check), the SQLite
#                      integration suites (functional, output contracts,
#                      terminal), the documentation's commands (docs) and one
#                      PostgreSQL suite (output contracts) against a throwaway
#                      server (tests/helpers/with-postgres.sh; without
#                      PostgreSQL installed it is skipped). Under 5 minutes on
#                      2 cores: 152-163 s with build/ up to date, at load 4-9
#                      from other builds (CONTRIBUTING.md)
#   make check         the full suite, what CI runs (.ci/run): both builds, the .deb (from build/) and
#                      the previous release (for the upgrade tests), then every test in
#                      build/ and the sanitizer lane (label asan) in build-asan/,
#                      against a throwaway PostgreSQL and pgbouncer
#                      (tests/helpers/with-postgres.sh), then the .deb's own test
#                      (tests/package/test_deb.sh: installs it into a scratch root),
#                      then each fuzz target briefly (FUZZ_CHECK_SECONDS each)
#   make build-fuzz    the libFuzzer targets (clang, ASan + UBSan), in build-fuzz/
#   make fuzz          each fuzz target for FUZZ_SECONDS (tests/fuzz/run.sh)
#   make screenshot    docs/serve.png, README's picture of clock serve: a small fleet's
#                      night (tests/integration/test_serve.cpp, "what happened
#                      tonight") drawn by headless Chromium; needs chromium and libfaketime
#   make format        clang-format the C++ sources in place
#   make check-format  fail if any C++ source is not clang-formatted
#   make package       the Debian package build-pkg/clock_*.deb (cpack -G DEB)
#   make clean         remove every build directory (build, build-asan, build-demo,
#                      build-fuzz, build-pkg, build-release)

SHELL := /bin/bash
.DEFAULT_GOAL := build
# The steps run one after another (deps before any build); the parallelism is
# inside them: the compiler jobs and the test jobs.
.NOTPARALLEL:

NPROC := $(shell nproc 2>/dev/null || echo 2)
BUILD_TYPE ?= RelWithDebInfo
# The tests are independent (each has its own temp dir and database), and
# they mostly wait: three lanes of integration entries plus a terminal entry
# (tests/CMakeLists.txt) need four jobs whatever the number of cores.
CTEST_JOBS ?= $(shell n=$(NPROC); [ $$n -lt 4 ] && n=4; echo $$n)
# The ctest options of both runs. A test with no TIMEOUT of its own gets 300s.
CTEST_FLAGS ?= --output-on-failure --no-tests=error --timeout 300 -j$(CTEST_JOBS)
# Sanitizer settings for the tests of build-asan; UBSan already aborts on the
# first error (-fno-sanitize-recover=all in CMakeLists.txt).
# Seconds per fuzz target: `make fuzz`, and the short run of `make check`.
FUZZ_SECONDS ?= 300
FUZZ_CHECK_SECONDS ?= 10
SANITIZER_ENV := ASAN_OPTIONS=detect_leaks=1:check_initialization_order=1 \
                 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 \
                 UBSAN_OPTIONS=print_stacktrace=1

# The C++ sources, tracked or new, never those of a build directory.
CXX_SOURCES = git ls-files --cached --others --exclude-standard -- '*.cpp' '*.hpp' ':(exclude)build*/**'

.PHONY: deps build build-asan build-previous build-fuzz fuzz demo test check format check-format clean package package-from-build bench screenshot

deps:
	packaging/install-deps.sh

# ccache, where it is installed (make deps installs it), for every build and
# for the upgrade test's build of the previous release (tests/upgrade): paths
# are taken relative to the checkout and the working directory is left out of
# the hash, so a fresh clone elsewhere reuses the objects of an earlier one.
ifneq ($(shell command -v ccache 2>/dev/null),)
export CCACHE_BASEDIR ?= $(CURDIR)
export CCACHE_NOHASHDIR ?= 1
export CMAKE_CXX_COMPILER_LAUNCHER ?= ccache
export CMAKE_C_COMPILER_LAUNCHER ?= ccache
endif

# $(call configure,DIR,EXTRA_CMAKE_ARGS): Ninja when it is there, else CMake's
# default. The generator is chosen at the first configure only: CMake refuses
# to change the generator of an existing build directory.
define configure
	@gen=(); \
	if [ ! -f $(1)/CMakeCache.txt ] && command -v ninja >/dev/null; then gen=(-G Ninja); fi; \
	set -x; cmake -S . -B $(1) "$${gen[@]}" -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(2)
endef

# Debian's compiler and linker hardening flags (dpkg-buildflags,
# hardening=+all) as CMake arguments, read when the recipe runs (make deps
# installs dpkg-dev first): the package's flags, and build/'s, so that the
# binary make check tests is the one it packages (package-from-build).
HARDENING_ARGS = \
  -DCMAKE_CXX_FLAGS="$$(DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get CXXFLAGS) $$(DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get CPPFLAGS)" \
  -DCMAKE_EXE_LINKER_FLAGS="$$(DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get LDFLAGS)" \
  -DCMAKE_MODULE_LINKER_FLAGS="$$(DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get LDFLAGS)"

build: deps
	@command -v dpkg-buildflags >/dev/null || \
	  { echo "make build: needs dpkg-dev (dpkg-buildflags): make deps, or apt-get install dpkg-dev" >&2; exit 1; }
	$(call configure,build,-DENABLE_SANITIZERS=OFF $(HARDENING_ARGS))
	cmake --build build -j$(NPROC)

build-asan: deps
	$(call configure,build-asan,-DENABLE_SANITIZERS=ON)
	cmake --build build-asan -j$(NPROC)

# Only the fuzz targets and the parsers they reach (tests/fuzz/CMakeLists.txt),
# not clock_core, clock or its tests.
build-fuzz: deps
	$(call configure,build-fuzz,-DCMAKE_CXX_COMPILER=clang++ -DCLOCK_BUILD_FUZZERS=ON -DCLOCK_BUILD_TESTS=OFF -DENABLE_SANITIZERS=OFF)
	cmake --build build-fuzz -j$(NPROC) --target fuzzers

fuzz: build-fuzz
	tests/fuzz/run.sh --build build-fuzz --seconds $(FUZZ_SECONDS)

# No servers, test tools or fuzzers: the toolchain and the libraries
# (install-deps.sh --demo), and only the clock target (with the PostgreSQL
# module it loads), in a folder of its own so that build/'s tests stay on.
demo:
	packaging/install-deps.sh --demo
	$(call configure,build-demo,-DCLOCK_BUILD_TESTS=OFF -DENABLE_SANITIZERS=OFF)
	cmake --build build-demo -j$(NPROC) --target clock
	CLOCK_BINARY=build-demo/clock packaging/demo.sh

# One PostgreSQL server (and pgbouncer) for both runs; each test makes its own
# database. Every entry runs in build/; build-asan/ runs those labelled
# "asan" (tests/CMakeLists.txt says which and why). Then the .deb is unpacked and installed into a
# scratch root and checked (tests/package/test_deb.sh, lintian included), and
# each fuzz target runs for FUZZ_CHECK_SECONDS from its seed corpus.
# Every step always runs; any failure fails the target.
define CTEST_BOTH_BUILDS
  failed=(); \
  echo "==> ctest in build/"; \
  ctest --test-dir build $(CTEST_FLAGS) || failed+=(build); \
  echo "==> ctest in build-asan/ -L asan"; \
  env $(SANITIZER_ENV) ctest --test-dir build-asan $(CTEST_FLAGS) -L asan || failed+=(build-asan); \
  if [ $${#failed[@]} -gt 0 ]; then echo "make check: tests failed in: $${failed[*]}" >&2; exit 1; fi
endef

# The previous release for the upgrade tests (tests/upgrade/build_release.sh),
# built before the tests start rather than by their ctest fixture beside
# them: on 2 cores a compile next to the timed tests slows them past their
# margins. The fixture then finds it built.
build-previous: build
	tests/upgrade/build_release.sh v1.0.0 build/upgrade/v1.0.0

check: deps build build-asan build-fuzz package-from-build build-previous
	@echo "==> tests/helpers/with-postgres.sh: ctest in build/, then in build-asan/"
	@failed=(); \
	tests/helpers/with-postgres.sh bash -c '$(CTEST_BOTH_BUILDS)' || failed+=(ctest); \
	echo "==> tests/package/test_deb.sh build/clock_*.deb"; \
	tests/package/test_deb.sh build/clock_*.deb || failed+=(package); \
	echo "==> tests/fuzz/run.sh: each fuzz target for $(FUZZ_CHECK_SECONDS)s"; \
	tests/fuzz/run.sh --build build-fuzz --seconds $(FUZZ_CHECK_SECONDS) || failed+=(fuzz); \
	if [ $${#failed[@]} -gt 0 ]; then echo "make check: failed: $${failed[*]}" >&2; exit 1; fi; \
	echo "make check: all tests passed in build/ and build-asan/, the .deb's and the fuzzers'"

format:
	$(CXX_SOURCES) | xargs -r clang-format -i

check-format:
	$(CXX_SOURCES) | xargs -r clang-format --dry-run -Werror

# The quick lane. One PostgreSQL suite, the output contracts (11 s in make
# test, plus about 3 s for the server's start): it loads the module and runs
# acquire, status and history on PostgreSQL; docs runs docs/postgresql.md's
# set-up on a server of its own (10 s in all); serve-sqlite, clock serve's
# pages and a headless chromium drawing one (about 40 s). The others stay in `make check`: integration-postgres
# alone takes 4-7 minutes on 2 cores. The rule that keeps both lanes honest
# (CONTRIBUTING.md): a special path that the sanitizer build does not run, or
# that a rename can break, stays only if it saves at least a tenth of what a
# user waits for.
TEST_LANE := ^(unit|routine-catalogue|integration-sqlite|output-sqlite|terminal-sqlite|output-postgres|serve-sqlite|docs)$$

test: build
	tests/helpers/with-postgres.sh ctest --test-dir build $(CTEST_FLAGS) -R '$(TEST_LANE)'

# The fleet's database is /var/lib/clock/clock.db, as the packaged
# configuration names it, on a tmpfs of a private mount namespace (root, as
# the fleet's host names need anyway): the page's header shows that path, and
# whatever the machine keeps in /var/lib/clock stays out of sight and intact.
screenshot: build
	mkdir -p /var/lib/clock
	unshare --mount --propagation private sh -c 'mount -t tmpfs -o mode=0755 clock-screenshot /var/lib/clock && \
	  exec env CLOCK_TEST_BACKEND=sqlite CLOCK_TEST_SQLITE_DIR=/var/lib/clock CLOCK_BINARY=$(CURDIR)/build/clock \
	  CLOCK_TEST_SCREENSHOT=$(CURDIR)/docs/serve.png \
	  build/tests/clock_integration_tests --test-suite=serve --test-case="*what happened tonight*"'

# Every directory a target here creates: build, build-asan, build-demo (make
# demo), build-fuzz (make build-fuzz), build-pkg (make package) and
# build-release (make bench).
clean:
	rm -rf build build-asan build-demo build-fuzz build-pkg build-release

# The .deb (cmake/Packaging.cmake): a Release build in build-pkg/ without the
# tests, with Debian's compiler and linker hardening flags (dpkg-buildflags,
# hardening=+all), then cpack -G DEB, which strips the binary and computes
# Depends with dpkg-shlibdeps. make check tests the result; by hand:
#   tests/package/test_deb.sh build-pkg/clock_*.deb   (runs lintian too, if installed)
package: BUILD_TYPE = Release
package: deps
	@command -v dpkg-buildflags >/dev/null && command -v dpkg-shlibdeps >/dev/null || \
	  { echo "make package: needs dpkg-dev (dpkg-buildflags, dpkg-shlibdeps): apt-get install dpkg-dev" >&2; exit 1; }
	$(call configure,build-pkg,-DCLOCK_BUILD_TESTS=OFF -DENABLE_SANITIZERS=OFF $(HARDENING_ARGS))
	cmake --build build-pkg -j$(NPROC)
	rm -f build-pkg/clock_*.deb
	cd build-pkg && cpack -G DEB
	@ls -1 build-pkg/clock_*.deb

# The same package from build/ (make check): build/ has the package's
# hardening flags and installs the same files (the tests are never
# installed), so make check tests the binary it packages without a second
# compile of clock (230 s of a cold CI run on 2 cores). -O2 -g, as Debian
# builds, rather than build-pkg's Release -O3; cpack strips either.
package-from-build: build
	rm -f build/clock_*.deb
	cd build && cpack -G DEB
	@ls -1 build/clock_*.deb

# Benchmarks (tests/bench/run.sh): a Release build in build-release/, its own
# PostgreSQL, pgbouncer, MariaDB and etcd, clock beside flock, etcdctl lock, psql and
# pgbench; prints a table of medians, ratios and targets (also in
# build-release/bench/results.md). About 10 minutes. Not part of `make check`.
bench:
	packaging/install-deps.sh --bench
	tests/bench/run.sh
