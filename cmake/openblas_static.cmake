# OpenBLAS, linked statically into libmoh_core.so: target moh_openblas (interface) and MOH_CBLAS_INCLUDE.
#
# Debian's OpenBLAS is a DYNAMIC_ARCH build: GEMM kernel sets for twenty x86 CPU generations, picked at
# run time (36 MB as a shared library, plus libgfortran and libquadmath for its LAPACK). moh calls only
# cblas_sgemm/cblas_dgemm (and ?gemv for single rows) and the thread count, so the static archive of the OpenMP build (one thread
# pool with our ops) is linked with --gc-sections, keeping only what those reach (no LAPACK, no Fortran
# runtime), and its symbols stay private to libmoh_core.so (--exclude-libs).
#
# The run-time dispatcher references every generation's kernel table. Tables of generations that a
# build for x86-64-v3 (MOH_CPU_ARCH's default: AVX2 + FMA) cannot run on are defined as aliases of
# PRESCOTT (SSE3), OpenBLAS's own fallback, so the linker never pulls their kernels in: correct on every
# x86-64 CPU, fast on the ones moh targets. Kept: HASWELL (AVX2, also picked for AMD Zen 4 by this
# version), ZEN (Zen 1-3), SKYLAKEX (AVX-512; COOPERLAKE, which only adds bf16 sbgemm, aliases it).
# libmoh_core.so grows by about 7 MB; the bundle (scripts/bundle.sh) shrinks by about 33 MB.
# Invariant: OPENBLAS_CORETYPE still forces any generation; aliased ones run the kept table they alias.
find_path(MOH_CBLAS_INCLUDE cblas.h PATH_SUFFIXES openblas-openmp REQUIRED)
find_library(MOH_OPENBLAS_ARCHIVE libopenblas.a PATH_SUFFIXES openblas-openmp REQUIRED
  DOC "the static OpenBLAS of the OpenMP build (Debian: libopenblas-openmp-dev)")

set(moh_openblas_prescott_aliases ATOM CORE2 PENRYN DUNNINGTON NEHALEM NANO OPTERON OPTERON_SSE3 BARCELONA
  BOBCAT SANDYBRIDGE BULLDOZER PILEDRIVER STEAMROLLER EXCAVATOR)
set(moh_openblas_link_options "LINKER:--gc-sections" "LINKER:--exclude-libs,libopenblas.a"
  "LINKER:--defsym,gotoblas_COOPERLAKE=gotoblas_SKYLAKEX")
foreach(core IN LISTS moh_openblas_prescott_aliases)
  list(APPEND moh_openblas_link_options "LINKER:--defsym,gotoblas_${core}=gotoblas_PRESCOTT")
endforeach()

add_library(moh_openblas INTERFACE)
target_link_libraries(moh_openblas INTERFACE ${MOH_OPENBLAS_ARCHIVE} OpenMP::OpenMP_CXX m)
target_link_options(moh_openblas INTERFACE ${moh_openblas_link_options})
