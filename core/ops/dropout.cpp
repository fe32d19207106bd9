// dropout: validates p, reserves the Philox counters (uniform_counters(numel), always) and runs the
// backend kernel; the rule itself is documented in core/math/dropout_math.h.
#include "core/kernels/dropout.h"

#include "core/dispatch.h"
#include "core/ops.h"
#include "core/ops/checks.h"

namespace moh {

DropoutForward dropout(const Tensor& x, double p, Generator& gen) {
  MOH_CHECK(x.defined(), "dropout: got an undefined tensor");
  MOH_CHECK(p >= 0.0 && p <= 1.0, "dropout: p must be in [0, 1], got ", p);
  MOH_CHECK(is_math_float(x), "dropout: expected a ", math_float_names(x), " tensor, got ", describe(x));
  DropoutForward r{Tensor::empty(x.shape(), x.dtype(), x.device()),
                   Tensor::empty(x.shape(), DType::Bool, x.device())};
  const uint64_t offset = gen.reserve(uniform_counters(x.numel()));
  MOH_BACKEND(x.device(), dropout, r.out, r.mask, x.contiguous(), p, gen.seed(), offset);
  return r;
}

}  // namespace moh
