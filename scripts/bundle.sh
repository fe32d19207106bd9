#!/usr/bin/env bash
# Packs a build into one relocatable folder that runs on another x86-64 Linux host (a GPU machine
# without our Debian packages), and into <out_dir>.tar.gz, the form that travels:
#   bin/          moh, moh_tests, moh_dist_tests, moh_make_image_folder, the moh_bench* programs
#                 (moh_bench_cuda in CUDA builds)
#   lib/          every shared library they load (libmoh_core.so with OpenBLAS linked in, yaml-cpp,
#                 spdlog, fmt, HDF5 with its libsz/libaec/libcurl chain, OpenMPI, jpeg, png, zlib,
#                 libgomp, libstdc++, libgcc_s, ...) except glibc's core libraries and CUDA's, which
#                 come from the host (run.sh --host-libs prints the pattern)
#   source/       what the tests read from the source tree: configs/, docs/, tests/reference/fixtures/
#   run.sh        the launcher (scripts/bundle_run.sh): sets the library path and the test data paths
#   gpu_check.sh  the GPU check (scripts/gpu_check.sh) and its crash-isolating test runner
#                 (scripts/gtest_isolated.sh)
#   BUILD_INFO    source commit, build folder, CUDA backend, glibc and CUDA versions of the build machine
# The CUDA runtime is linked statically into libmoh_core.so, so the host needs only a driver that
# supports the build's CUDA version and that version's cuBLAS and NCCL (its toolkit, or PyTorch's
# pip wheels). The bundle is checked with run.sh --check (all libraries found, the non-host ones in the
# bundle), and the archive, the form a device run carries, must stay under 60 MiB (what a run may carry
# is 64 MiB with the source tree; the folder, about 92 MiB since oneDNN's 40 MB library, is unpacked
# there; cmake/openblas_static.cmake keeps OpenBLAS at 7 MB of libmoh_core.so instead of a 36 MB library).
# Usage: scripts/bundle.sh [build_dir (build)] [out_dir (<build_dir>/bundle)]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd -P)
build_arg=${1:-build}
[[ -f $build_arg/CMakeCache.txt ]] || { echo "bundle.sh: $build_arg is not a CMake build folder" >&2; exit 2; }
build=$(cd "$build_arg" && pwd -P)
out=${2:-$build/bundle}
limit_mib=60

die() {
  echo "bundle.sh: $*" >&2
  exit 1
}

programs=(moh moh_tests moh_dist_tests moh_make_image_folder moh_bench moh_bench_attention moh_bench_image_loader
          moh_bench_vit_train)
[[ -f $build/libmoh_core.so ]] || die "$build/libmoh_core.so is missing: build first (cmake --build $build_arg)"
cuda=no
# (ldd's output is read whole: `ldd | grep -q` under pipefail fails when grep exits before ldd is done.)
core_deps=$(ldd "$build/libmoh_core.so")
if [[ $core_deps == *libcublas.so* ]]; then
  cuda=yes
  programs+=(moh_bench_cuda)
fi
for p in "${programs[@]}"; do
  [[ -x $build/$p ]] || die "$build/$p is missing: build first (cmake --build $build_arg)"
done

if [[ -e $out ]]; then
  [[ -x $out/run.sh && -d $out/bin ]] || die "$out exists and is not a bundle: refusing to replace it"
  rm -rf "$out"
fi
mkdir -p "$out/bin" "$out/lib" "$out/source/tests/reference"
out=$(cd "$out" && pwd -P)

# Libraries: ldd lists each program's whole closure; the host's own (glibc, CUDA) stay out.
host_libs=$("$src/scripts/bundle_run.sh" --host-libs)
declare -A libs=()
for p in "${programs[@]}"; do
  cp -p "$build/$p" "$out/bin/"
  while read -r name arrow path _; do
    [[ $arrow == "=>" ]] || continue
    [[ $path != not ]] || die "$p needs $name, which is not found on this machine"
    [[ $name =~ ^libcudart\.so ]] &&
      die "$p loads the shared CUDA runtime ($path): link CUDA::cudart_static (CMakeLists.txt)"
    [[ $name =~ $host_libs ]] || libs[$name]=$path
  done < <(ldd "$build/$p")
done
for name in "${!libs[@]}"; do cp -L "${libs[$name]}" "$out/lib/$name"; done
# Our own binaries carry symbol tables the bundle does not need (Debian's libraries come stripped).
strip --strip-unneeded "$out"/bin/* "$out"/lib/libmoh_core.so*

cp -r "$src/configs" "$src/docs" "$out/source/"
cp -r "$src/tests/reference/fixtures" "$out/source/tests/reference/"
cp "$src/scripts/bundle_run.sh" "$out/run.sh"
cp "$src/scripts/gpu_check.sh" "$src/scripts/gtest_isolated.sh" "$out/"
{
  echo "source: $(git -C "$src" describe --always --dirty 2>/dev/null || echo unknown)"
  echo "build: $build ($(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt"))"
  echo "cuda backend: $cuda"
  echo "glibc: $(ldd --version | sed -n '1s/.* //p')"
  if [[ $cuda == yes ]]; then
    nvcc=$(sed -n 's/^CMAKE_CUDA_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
    nvcc=${nvcc:-/usr/local/cuda/bin/nvcc}
    echo "cuda: $("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
  fi
} > "$out/BUILD_INFO"

if ! check=$(env -u LD_LIBRARY_PATH "$out/run.sh" --check); then
  echo "$check" >&2
  die "the bundle is not self-contained (run.sh --check, above)"
fi

archive=$out.tar.gz
tar -C "$(dirname "$out")" -czf "$archive" "$(basename "$out")"
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
unpacked=$(du -sb "$out" | cut -f1)
packed=$(stat -c %s "$archive")
echo "bundle.sh: $out: ${#programs[@]} programs, ${#libs[@]} libraries, $(mib "$unpacked") MiB unpacked"
echo "bundle.sh: $archive: $(mib "$packed") MiB (limit $limit_mib MiB: the archive is what travels)"
check_size() {  # path bytes
  (($2 < limit_mib * 1048576)) ||
    die "$1 is $(mib "$2") MiB, over the $limit_mib MiB limit: see the largest files with du -a $out | sort -n"
}
check_size "$archive" "$packed"
