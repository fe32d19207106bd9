// fill_ and zero_: write a constant into an existing tensor.
#include "core/kernels/fill.h"
#include "core/dispatch.h"
#include "core/ops.h"

namespace moh {

void fill_(Tensor& self, double value) {
  MOH_CHECK(self.defined(), "fill_: undefined tensor");
  for (size_t d = 0; d < self.shape().size(); ++d)
    MOH_CHECK(self.strides()[d] != 0 || self.shape()[d] <= 1, "fill_: cannot write into a broadcast (expanded) view ",
              describe(self));
  MOH_BACKEND(self.device(), fill, self, value);
}

void zero_(Tensor& self) { fill_(self, 0.0); }

}  // namespace moh
