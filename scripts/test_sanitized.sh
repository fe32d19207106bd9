#!/usr/bin/env bash
# The CPU test suite once more under AddressSanitizer + UndefinedBehaviorSanitizer (with LeakSanitizer),
# then the fuzz smoke (scripts/fuzz.sh --smoke): the second half of CI (scripts/test.sh), in its own build
# folder (scripts/sanitized_build.sh: clang, CUDA off). Any sanitizer report fails the test that caused it.
# Usage: scripts/test_sanitized.sh   (BUILD_DIR default build-asan, JOBS default nproc; FUZZ_SMOKE_SECONDS
# per fuzz target, default 5). Suppressions: scripts/sanitizers/ (each entry says why).
set -euo pipefail
cd "$(dirname "$0")/.."

export BUILD_DIR=${BUILD_DIR:-build-asan}
jobs=${JOBS:-$(nproc)}

# Tests that do not run under the sanitizers, each with its reason (CTest -E regexes).
excluded=(
  # The bundle's packaging check: the main build's run covers it (the bundle holds no sanitized build).
  '^bundle\.'
  # Parameter counts of the full-size presets (DeiT-Base 86M, GPT-2 124M / LLM-B, the SD VAE 84M): under ASan
  # they took 37 s, 17 s and 10 s to allocate and initialise, through the same construction code the small
  # models' sanitized tests run.
  '^Vit\.PresetParameterCountsMatchTimm$'
  '^Llm\.PresetParameterCounts$'
  '^Autoencoder\.SdPresetHasTheStableDiffusionVaeParameters$'
  # A learning bar (30 training steps to a PSNR gain: 39 s under ASan); the sanitized pass runs the same task code
  # in AutoencoderTask's resume and evaluation tests.
  '^AutoencoderTask\.ShortRunLearnsToReconstruct$'
)

start=$SECONDS
# Only what CTest runs (moh_tests brings moh and moh_make_image_folder); fuzz.sh builds its own targets and
# no test runs a bench program (the 12 of them are the last ~30 s of an ASan build).
scripts/sanitized_build.sh moh_tests moh_layering_tests moh_dist_tests
build_s=$((SECONDS - start))

export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:check_initialization_order=1:strict_init_order=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$PWD/scripts/sanitizers/lsan.supp:print_suppressions=0
# Tests run with LeakSanitizer off (ASan and UBSan stay on), each with its reason.
no_leak_check=(
  # Processes under mpirun: OpenMPI 4.1 leaves hundreds of allocations at MPI_Finalize, most from MCA
  # plugins it has unloaded by exit, so LeakSanitizer cannot even name the library (none is moh's).
  '^dist\.train$'
  '^dist\.collectives_np2$'
)

start=$SECONDS
joined() { local IFS='|'; echo "$*"; }
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$jobs" --timeout 600 -E "$(joined "${excluded[@]}" "${no_leak_check[@]}")"
ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0 \
  ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$jobs" --timeout 600 -R "$(joined "${no_leak_check[@]}")"
test_s=$((SECONDS - start))

start=$SECONDS
scripts/fuzz.sh --smoke "${FUZZ_SMOKE_SECONDS:-5}"
echo "test_sanitized: build ${build_s}s, sanitized tests ${test_s}s, fuzz smoke $((SECONDS - start))s"
