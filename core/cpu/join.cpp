// cat on the CPU: one strided copy per input into out.narrow(dim, offset, size) (the copy engine
// merges contiguous runs into memcpy and parallelises large copies).
#include "core/kernels/join.h"

#include "core/kernels/copy.h"

namespace moh::cpu {

void cat(const Tensor& out, const std::vector<Tensor>& inputs, int64_t dim) {
  int64_t offset = 0;
  for (const Tensor& t : inputs) {
    const int64_t size = t.size(dim);
    copy(out.narrow(dim, offset, size), t);
    offset += size;
  }
}

}  // namespace moh::cpu
