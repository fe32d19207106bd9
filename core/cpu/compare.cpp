// CPU comparison kernels (numeric inputs, bool output) and where(cond, a, b) for any dtype.
#include "core/cpu/elementwise_loop.h"
#include "core/dispatch.h"
#include "core/kernels/elementwise.h"

namespace moh::cpu {
namespace {

template <class T>
void run_compare(CompareOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  auto map = [&](auto f) { map_elements<bool, T, T>(out, {&a, &b}, f); };
  switch (op) {
    case CompareOp::Eq: return map([](T x, T y) { return x == y; });
    case CompareOp::Ne: return map([](T x, T y) { return x != y; });
    case CompareOp::Lt: return map([](T x, T y) { return x < y; });
    case CompareOp::Le: return map([](T x, T y) { return x <= y; });
    case CompareOp::Gt: return map([](T x, T y) { return x > y; });
    case CompareOp::Ge: return map([](T x, T y) { return x >= y; });
  }
}

}  // namespace

void compare(CompareOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  dispatch_numeric(a.dtype(), op_name(op), [&]<class T>() { run_compare<T>(op, out, a, b); });
}

void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  MOH_CHECK(cond.dtype() == DType::Bool, "where: cond must be bool, got ", dtype_name(cond.dtype()));
  dispatch_all(out.dtype(), "where", [&]<class T>() {
    map_elements<T, bool, T, T>(out, {&cond, &a, &b}, [](bool c, T x, T y) { return c ? x : y; });
  });
}

}  // namespace moh::cpu
