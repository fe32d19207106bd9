// CUDA comparison kernels (numeric inputs, bool output) and where(cond, a, b) for any dtype, the
// twin of core/cpu/compare.cpp over map_elements. 16-bit floats compare as floats.
#include "core/cuda/elementwise_launch.cuh"
#include "core/kernels/elementwise.h"

namespace moh::cuda {
namespace {

template <class T>
void run_compare(CompareOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  using C = compute_t<T>;
  auto map = [&](auto f) { map_elements<bool, T, T>(out, {&a, &b}, f); };
  switch (op) {
    case CompareOp::Eq: return map([] __device__(T x, T y) { return C(x) == C(y); });
    case CompareOp::Ne: return map([] __device__(T x, T y) { return C(x) != C(y); });
    case CompareOp::Lt: return map([] __device__(T x, T y) { return C(x) < C(y); });
    case CompareOp::Le: return map([] __device__(T x, T y) { return C(x) <= C(y); });
    case CompareOp::Gt: return map([] __device__(T x, T y) { return C(x) > C(y); });
    case CompareOp::Ge: return map([] __device__(T x, T y) { return C(x) >= C(y); });
  }
}

template <class T>
void run_where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  map_elements<T, bool, T, T>(out, {&cond, &a, &b}, [] __device__(bool c, T x, T y) { return c ? x : y; });
}

}  // namespace

void compare(CompareOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  dispatch_math_numeric(a.dtype(), op_name(op), [&]<class T>() { run_compare<T>(op, out, a, b); });
}

void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  MOH_CHECK(cond.dtype() == DType::Bool, "where: cond must be bool, got ", dtype_name(cond.dtype()));
  dispatch_all(out.dtype(), "where", [&]<class T>() { run_where<T>(out, cond, a, b); });
}

}  // namespace moh::cuda
