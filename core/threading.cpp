// The process-wide thread pool: OpenMP, shared with OpenBLAS (built against the same runtime).
#include <omp.h>

#include "core/ops.h"

extern "C" void openblas_set_num_threads(int);

namespace moh {

void set_num_threads(int threads) {
  MOH_CHECK(threads >= 1, "set_num_threads: expected at least 1 thread, got ", threads);
  omp_set_num_threads(threads);
  openblas_set_num_threads(threads);
}

int num_threads() { return omp_get_max_threads(); }

}  // namespace moh
