#!/usr/bin/env bash
# Launcher of a moh bundle (scripts/bundle.sh copies this file to <bundle>/run.sh): runs one of the
# bundle's programs with the bundle's libraries and test data on any x86-64 Linux host whose glibc is
# at least the build machine's (2.36 for Debian 12).
#   run.sh PROGRAM [ARGS...]  e.g. run.sh moh_tests --gtest_filter='CudaRuntime.*'
#   run.sh --check            every bundled binary finds its libraries, the bundle's own from lib/ and
#                             glibc's and CUDA's from the host; otherwise names each one and exits 1
#   run.sh --host-libs        the pattern of library names taken from the host (bundle.sh uses it)
# What it sets:
#   LD_LIBRARY_PATH  <bundle>/lib, then the host's CUDA folders that exist (/usr/local/cuda/lib64, the
#                    driver's /usr/local/nvidia/lib64, and the lib folders of NVIDIA's pip wheels that
#                    PyTorch installs: site-packages/nvidia/*/lib, where cuBLAS and NCCL are), then the
#                    caller's own value
#   MOH_SOURCE_DIR, MOH_FIXTURE_DIR, MOH_CLI_PATH, MOH_MAKE_IMAGE_FOLDER_PATH
#                    the bundle's copies, read by the tests instead of the paths compiled in
#                    (tests/test_paths.h)
#   MOH_MPIRUN       the host's mpirun, or empty (the tests that launch mpirun then skip)
# MPI: a single process never initialises MPI (only a launcher's environment makes a multi-process
# world), so it needs nothing beyond the bundled OpenMPI libraries. Several processes need the host's
# OpenMPI 4.1 (Debian 12 or Ubuntu's openmpi-bin: mpirun, orted, and the MCA components and help files
# that the bundled libmpi loads from the compiled-in /usr/lib/x86_64-linux-gnu/openmpi and
# /usr/share/openmpi).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)

# glibc's core libraries and CUDA's are always the host's own: the driver must match the host's kernel
# module, and cuBLAS (hundreds of MB) must match the driver.
glibc_libs='linux-vdso\.so|ld-linux-x86-64\.so|lib(c|m|dl|pthread|rt|resolv)\.so'
cuda_libs='lib(cuda|cudart|cublas|cublasLt|nccl|cudnn[a-z_]*|nvidia-[a-z_.-]*|nvrtc[a-z_.-]*|nvJitLink)\.so'
host_libs="^($glibc_libs|$cuda_libs)"

usage() {
  echo "usage: run.sh PROGRAM [ARGS...] | --check | --host-libs" >&2
  echo "programs: $(cd "$here/bin" 2>/dev/null && echo *)" >&2
  exit 2
}

# The host's folders of CUDA libraries, in search order.
cuda_lib_dirs() {
  local d r roots=()
  for d in /usr/local/cuda/lib64 /usr/local/nvidia/lib64; do [[ -d $d ]] && echo "$d"; done
  # NVIDIA's pip wheels: nvidia/<library>/lib, and nvidia/cu13/lib for CUDA 13's toolkit wheels.
  if command -v python3 >/dev/null; then
    mapfile -t roots < <(python3 -c 'import nvidia; print(*nvidia.__path__, sep="\n")' 2>/dev/null || true)
  fi
  shopt -s nullglob
  roots+=(/usr/lib/python3*/dist-packages/nvidia /usr/local/lib/python3*/dist-packages/nvidia
          /opt/*/.venv/lib/python3*/site-packages/nvidia /opt/conda/lib/python3*/site-packages/nvidia)
  for r in "${roots[@]}"; do
    for d in "$r"/*/lib; do echo "$d"; done
  done | awk '!seen[$0]++'
}

# ldd of every bundled binary under this environment: each library is found, and every library that
# is not the host's comes from <bundle>/lib (a system copy would hide a library missing from the bundle).
check() {
  local f name arrow path _ binaries=0 status=0
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  for f in "$here"/bin/* "$here"/lib/*; do
    binaries=$((binaries + 1))
    while read -r name arrow path _; do
      [[ $arrow == "=>" ]] || continue
      if [[ $path == not ]]; then
        echo "missing: $name (needed by ${f#"$here"/})"
        status=1
      elif [[ ! $name =~ $host_libs && $path != "$here/lib/"* ]]; then
        echo "not from the bundle: $name => $path (needed by ${f#"$here"/})"
        status=1
      fi
    done < <(ldd "$f" 2>&1)
  done
  if ((status)); then
    echo "run.sh --check: FAILED (see above)"
  else
    echo "run.sh --check: the libraries of all $binaries binaries are found"
  fi
  return $status
}

case "${1:-}" in
  --host-libs) echo "$host_libs"; exit 0 ;;
  "" | -h | --help) usage ;;
esac
[[ -d $here/bin && -d $here/lib ]] || { echo "run.sh: $here is not a bundle (make one with scripts/bundle.sh)" >&2; exit 2; }

lib_path=$here/lib
while read -r d; do lib_path+=:$d; done < <(cuda_lib_dirs)
export LD_LIBRARY_PATH=$lib_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export MOH_SOURCE_DIR=$here/source
export MOH_FIXTURE_DIR=$here/source/tests/reference/fixtures
export MOH_CLI_PATH=$here/bin/moh
export MOH_MAKE_IMAGE_FOLDER_PATH=$here/bin/moh_make_image_folder
MOH_MPIRUN=$(command -v mpirun || true)
export MOH_MPIRUN

if [[ $1 == --check ]]; then
  check
  exit
fi
[[ $1 != */* && -x $here/bin/$1 ]] || { echo "run.sh: no program '$1' in the bundle" >&2; usage; }
program=$here/bin/$1
shift
exec "$program" "$@"
