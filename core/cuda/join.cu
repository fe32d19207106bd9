// cat on CUDA, as on the CPU: one strided copy (core/kernels/copy.h, a single kernel launch on the
// compute stream) per non-empty input into out.narrow(dim, offset, size).
#include "core/kernels/join.h"

#include "core/kernels/copy.h"

namespace moh::cuda {

void cat(const Tensor& out, const std::vector<Tensor>& inputs, int64_t dim) {
  int64_t offset = 0;
  for (const Tensor& t : inputs) {
    const int64_t size = t.size(dim);
    if (t.numel() > 0) copy(out.narrow(dim, offset, size), t);
    offset += size;
  }
}

}  // namespace moh::cuda
