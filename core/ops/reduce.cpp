// Front ends of the reductions: dim wrapping and de-duplication, dtype checks, keepdim shapes.
// The kernel always writes the keepdim form; without keepdim it is viewed to the squeezed shape.
// variance is two-pass (mean, then the mean of squared deviations) for accuracy. sum_to_shape
// returns x itself (no copy) when x already has the requested shape.
#include "core/kernels/reduce.h"

#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops.h"
#include "core/ops/checks.h"

namespace moh {
namespace {

struct ReducePlan {
  std::vector<bool> reduced;  // per dim of x
  Shape keep_shape;           // x's shape with reduced dims set to 1
  Shape out_shape;            // the result shape for the caller's keepdim
  int64_t count = 1;          // elements folded into each output
};

// Empty dims = all dims. A 0-d tensor accepts dim 0 / -1 (and reduces nothing).
ReducePlan plan_reduce(const char* op, const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  MOH_CHECK(x.defined(), op, ": undefined input tensor");
  const int64_t nd = x.dim();
  ReducePlan plan;
  plan.reduced.assign(size_t(nd), dims.empty());
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, std::max<int64_t>(nd, 1), op);
    if (nd == 0) continue;
    MOH_CHECK(!plan.reduced[size_t(w)], op, ": dim ", d, " appears more than once in the reduced dims of ",
              describe(x));
    plan.reduced[size_t(w)] = true;
  }
  for (int64_t d = 0; d < nd; ++d) {
    const int64_t n = x.shape()[size_t(d)];
    if (plan.reduced[size_t(d)]) {
      plan.count *= n;
      plan.keep_shape.push_back(1);
      if (keepdim) plan.out_shape.push_back(1);
    } else {
      plan.keep_shape.push_back(n);
      plan.out_shape.push_back(n);
    }
  }
  return plan;
}

// Math floats (bfloat16/float16 on CUDA too), and int32/int64 unless float_only.
void check_dtype(const char* op, const Tensor& x, bool float_only) {
  const DType d = x.dtype();
  const bool ok = is_math_float(x) || (!float_only && (d == DType::Int32 || d == DType::Int64));
  MOH_CHECK(ok, op, ": expected a ", float_only ? math_float_names(x) : math_numeric_names(x), " tensor, got ",
            describe(x));
}

Tensor reduce_op(ReduceOp op, const char* name, const Tensor& x, const std::vector<int64_t>& dims,
                 bool keepdim) {
  ReducePlan plan = plan_reduce(name, x, dims, keepdim);
  check_dtype(name, x, op == ReduceOp::Mean);
  if (op == ReduceOp::Amax || op == ReduceOp::Amin)
    MOH_CHECK(plan.count > 0 || shape_numel(plan.keep_shape) == 0, name,
              ": cannot reduce over zero elements of ", describe(x));
  Tensor out = Tensor::empty(plan.keep_shape, x.dtype(), x.device());
  MOH_BACKEND(x.device(), reduce, op, out, x, plan.reduced);
  return out.view(plan.out_shape);
}

}  // namespace

Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce_op(ReduceOp::Sum, "sum", x, dims, keepdim);
}

Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce_op(ReduceOp::Mean, "mean", x, dims, keepdim);
}

Tensor amax(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce_op(ReduceOp::Amax, "amax", x, dims, keepdim);
}

Tensor amin(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce_op(ReduceOp::Amin, "amin", x, dims, keepdim);
}

Tensor variance(const Tensor& x, const std::vector<int64_t>& dims, int64_t correction, bool keepdim) {
  ReducePlan plan = plan_reduce("variance", x, dims, keepdim);
  check_dtype("variance", x, true);
  MOH_CHECK(correction >= 0, "variance: correction must be >= 0, got ", correction);
  Tensor dev = sub(x, mean(x, dims, true));
  mul_(dev, dev);
  Tensor sq = sum(dev, dims, keepdim);
  // Like PyTorch: a non-positive denominator gives inf/nan rather than an error.
  return div(sq, double(std::max<int64_t>(plan.count - correction, 0)));
}

Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) {
  ReducePlan plan = plan_reduce("argmax", x, {dim}, keepdim);
  check_dtype("argmax", x, false);
  if (x.dim() == 0) return zeros({}, DType::Int64, x.device());
  MOH_CHECK(plan.count > 0 || shape_numel(plan.keep_shape) == 0, "argmax: cannot take the argmax over dim ",
            dim, " of size 0 in ", describe(x));
  Tensor out = Tensor::empty(plan.keep_shape, DType::Int64, x.device());
  MOH_BACKEND(x.device(), argmax, out, x, wrap_dim(dim, x.dim(), "argmax"));
  return out.view(plan.out_shape);
}

Tensor sum_to_shape(const Tensor& x, const Shape& shape) {
  MOH_CHECK(x.defined(), "sum_to_shape: undefined input tensor");
  if (x.shape() == shape) return x;
  MOH_CHECK(
      shape.size() <= x.shape().size() && broadcast_shapes(shape, x.shape(), "sum_to_shape") == x.shape(),
      "sum_to_shape: ", describe(x), " is not a broadcast of shape ", shape_str(shape));
  const size_t lead = x.shape().size() - shape.size();
  std::vector<int64_t> dims;
  for (size_t d = 0; d < x.shape().size(); ++d)
    if (d < lead || (shape[d - lead] == 1 && x.shape()[d] != 1)) dims.push_back(int64_t(d));
  if (dims.empty()) return x.reshape(shape);  // only size-1 leading dims to drop
  return sum(x, dims, true).view(shape);
}

}  // namespace moh
