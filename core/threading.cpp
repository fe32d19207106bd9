// The process-wide thread pool: OpenMP, shared with OpenBLAS (built against the same runtime, linked
// statically and privately into libmoh_core.so: cmake/openblas_static.cmake).
#include <omp.h>

#include "core/ops.h"

extern "C" void openblas_set_num_threads(int);
extern "C" char* openblas_get_corename(void);

namespace moh {

void set_num_threads(int threads) {
  MOH_CHECK(threads >= 1, "set_num_threads: expected at least 1 thread, got ", threads);
  omp_set_num_threads(threads);
  openblas_set_num_threads(threads);
}

int num_threads() { return omp_get_max_threads(); }

std::string blas_core_name() { return openblas_get_corename(); }

}  // namespace moh
