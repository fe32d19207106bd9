// Indexing ops: topk, one_hot, gather/scatter/scatter_add, index_select/index_add. The front end
// checks ranks, sizes and dtypes, range-checks every index, then runs the gather/scatter kernels
// (index_select and index_add are a gather/scatter_add with the 1-D index expanded along `dim`).
// 0-d operands of gather/scatter are treated as 1-element 1-D tensors.
#include "core/kernels/indexing.h"

#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops.h"
#include "core/ops/checks.h"

namespace moh {
namespace {

void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  MOH_CHECK(a.defined() && b.defined(), op, ": got ", describe(a), " and ", describe(b));
  MOH_CHECK(a.device() == b.device(), op, ": operands on different devices: ", describe(a), " and ",
            describe(b));
}

void check_index_dtype(const char* op, const Tensor& index) {
  MOH_CHECK(index.dtype() == DType::Int64, op, ": expected an int64 index, got ", describe(index));
}

// Accumulating and ranking ops need a numeric dtype: int32, int64 or a math float (no bool;
// 16-bit floats on CUDA only).
void check_numeric(const char* op, const Tensor& x) {
  const DType t = x.dtype();
  MOH_CHECK(is_math_float(x) || t == DType::Int32 || t == DType::Int64, op, ": expected a ", math_numeric_names(x),
            " tensor, got ", describe(x));
}

Tensor at_least_1d(const Tensor& t) { return t.dim() == 0 ? t.reshape({1}) : t; }

// Checks x/index (and src) for gather/scatter and returns the wrapped dim. Index dims must not
// exceed x's (except along dim) nor src's.
int64_t check_gather_scatter(const char* op, const Tensor& x, int64_t dim, const Tensor& index,
                             const Tensor* src) {
  check_same_device(op, x, index);
  check_index_dtype(op, index);
  MOH_CHECK(index.dim() == x.dim(), op, ": index ", describe(index), " must have the rank of x ",
            describe(x));
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), op);
  if (src) {
    check_same_device(op, x, *src);
    MOH_CHECK(src->dtype() == x.dtype(), op, ": dtype mismatch: x ", describe(x), ", src ", describe(*src));
    MOH_CHECK(src->dim() == x.dim(), op, ": src ", describe(*src), " must have the rank of x ", describe(x));
  }
  for (int64_t e = 0; e < x.dim(); ++e) {
    MOH_CHECK(e == d || index.size(e) <= x.size(e), op, ": index ", describe(index), " is larger than x ",
              describe(x), " in dim ", e);
    MOH_CHECK(!src || index.size(e) <= src->size(e), op, ": index ", describe(index), " is larger than src ",
              describe(*src), " in dim ", e);
  }
  const int64_t limit = x.dim() == 0 ? 1 : x.size(d);
  MOH_BACKEND(x.device(), check_index_range, index, limit, op, "index",
              str_cat("dim ", d, " of x ", describe(x)));
  return d;
}

Tensor scatter_impl(const char* op, const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                    bool accumulate) {
  const int64_t d = check_gather_scatter(op, x, dim, index, &src);
  Tensor out = x.clone();
  MOH_BACKEND(x.device(), scatter, at_least_1d(out), d, at_least_1d(index), at_least_1d(src), accumulate);
  return out;
}

// The 1-D index viewed as [1, .., n, .., 1] and expanded to `shape` (stride 0 off `dim`).
Tensor expand_along(const Tensor& index, int64_t dim, const Shape& shape) {
  Shape s(shape.size(), 1);
  s[size_t(dim)] = index.numel();
  return index.view(s).expand(shape);
}

int64_t check_index_1d(const char* op, const Tensor& x, int64_t dim, const Tensor& index) {
  check_same_device(op, x, index);
  check_index_dtype(op, index);
  MOH_CHECK(index.dim() == 1, op, ": expected a 1-D index, got ", describe(index));
  MOH_CHECK(x.dim() >= 1, op, ": expected x with at least 1 dim, got ", describe(x));
  const int64_t d = wrap_dim(dim, x.dim(), op);
  MOH_BACKEND(x.device(), check_index_range, index, x.size(d), op, "index",
              str_cat("dim ", d, " of x ", describe(x)));
  return d;
}

}  // namespace

TopK topk(const Tensor& x, int64_t k, bool largest) {
  MOH_CHECK(x.defined() && x.dim() >= 1, "topk: expected a tensor with at least 1 dim, got ", describe(x));
  check_numeric("topk", x);
  MOH_CHECK(k >= 0 && k <= x.size(-1), "topk: k = ", k, " is outside [0, ", x.size(-1), "] for ",
            describe(x));
  Shape shape = x.shape();
  shape.back() = k;
  TopK r{Tensor::empty(shape, x.dtype(), x.device()), Tensor::empty(shape, DType::Int64, x.device())};
  MOH_BACKEND(x.device(), topk, r.values, r.indices, x, k, largest);
  return r;
}

Tensor one_hot(const Tensor& indices, int64_t num_classes, DType dtype) {
  MOH_CHECK(indices.defined(), "one_hot: got an undefined tensor");
  check_index_dtype("one_hot", indices);
  MOH_CHECK(num_classes > 0, "one_hot: num_classes must be positive, got ", num_classes);
  MOH_BACKEND(indices.device(), check_index_range, indices, num_classes, "one_hot", "indices",
              str_cat(num_classes, " classes"));
  Shape shape = indices.shape();
  shape.push_back(num_classes);
  Tensor out = Tensor::empty(shape, dtype, indices.device());
  MOH_BACKEND(indices.device(), one_hot, out, indices);
  return out;
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  const int64_t d = check_gather_scatter("gather", x, dim, index, nullptr);
  Tensor out = Tensor::empty(index.shape(), x.dtype(), x.device());
  MOH_BACKEND(x.device(), gather, at_least_1d(out), at_least_1d(x), d, at_least_1d(index));
  return out;
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_impl("scatter", x, dim, index, src, false);
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  if (x.defined()) check_numeric("scatter_add", x);
  return scatter_impl("scatter_add", x, dim, index, src, true);
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  const int64_t d = check_index_1d("index_select", x, dim, index);
  Shape shape = x.shape();
  shape[size_t(d)] = index.numel();
  Tensor out = Tensor::empty(shape, x.dtype(), x.device());
  MOH_BACKEND(x.device(), gather, out, x, d, expand_along(index, d, shape));
  return out;
}

Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  const int64_t d = check_index_1d("index_add", x, dim, index);
  check_same_device("index_add", x, src);
  MOH_CHECK(src.dtype() == x.dtype(), "index_add: dtype mismatch: x ", describe(x), ", src ", describe(src));
  check_numeric("index_add", x);
  Shape want = x.shape();
  want[size_t(d)] = index.numel();
  MOH_CHECK(src.shape() == want, "index_add: src ", describe(src), " must have shape ", shape_str(want),
            " (x ", describe(x), " with dim ", d, " of the index's length)");
  Tensor out = x.clone();
  MOH_BACKEND(x.device(), scatter, out, d, expand_along(index, d, want), src, true);
  return out;
}

Tensor index_select_backward(const Tensor& grad, int64_t dim, const Tensor& index, int64_t size) {
  MOH_CHECK(grad.defined() && grad.dim() >= 1, "index_select_backward: expected grad with at least 1 dim, got ",
            describe(grad));
  const int64_t d = wrap_dim(dim, grad.dim(), "index_select_backward");
  MOH_CHECK(size >= 0, "index_select_backward: size must be >= 0, got ", size);
  Shape shape = grad.shape();
  shape[size_t(d)] = size;
  Tensor out = zeros(shape, grad.dtype(), grad.device());
  check_index_1d("index_select_backward", out, d, index);
  check_numeric("index_select_backward", out);
  MOH_CHECK(grad.size(d) == index.numel(), "index_select_backward: grad ", describe(grad), " must have ",
            index.numel(), " entries (the index's length) along dim ", d);
  MOH_BACKEND(grad.device(), scatter, out, d, expand_along(index, d, grad.shape()), grad, true);
  return out;
}

}  // namespace moh
