// Finite-difference gradient check (see gradcheck.h). The objective is evaluated on the host in
// double, so the check itself depends on no op under test.
#include "autograd/gradcheck.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "autograd/tape.h"
#include "core/random.h"

namespace moh::ag {
namespace {

double objective(const Variable& out, const std::vector<double>& weights) {
  std::vector<double> values = out.data().to_vector<double>();
  double total = 0.0;
  for (size_t i = 0; i < values.size(); ++i) total += values[i] * weights[i];
  return total;
}

// Storage position (relative to the view's first element) of logical element `flat`.
int64_t element_offset(const Tensor& t, int64_t flat) {
  int64_t offset = 0;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    const int64_t size = t.shape()[size_t(d)];
    offset += (flat % size) * t.strides()[size_t(d)];
    flat /= size;
  }
  return offset;
}

void check_input(const Variable& v, size_t index) {
  MOH_CHECK(v.defined(), "gradcheck: input ", index, " is undefined");
  if (!v.requires_grad()) return;
  MOH_CHECK(v.is_leaf() && v.dtype() == DType::Float64 && v.device().is_cpu(), "gradcheck: input ", index,
            " ", v.describe(), " must be a float64 CPU leaf");
  for (int64_t d = 0; d < v.dim(); ++d)
    MOH_CHECK(v.data().strides()[size_t(d)] != 0 || v.shape()[size_t(d)] <= 1, "gradcheck: input ", index,
              " ", v.describe(), " is a broadcast view; perturbing one element would move several");
}

}  // namespace

GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Variable>& inputs,
                          const GradcheckOptions& options) {
  for (size_t i = 0; i < inputs.size(); ++i) check_input(inputs[i], i);
  MOH_CHECK(grad_enabled(), "gradcheck: called under NoGradGuard");

  // The inputs themselves are differentiated (so fn may also reach them another way, e.g. as a
  // module's parameters); their existing .grad is set aside and restored afterwards.
  std::vector<Tensor> saved_grads;
  for (const Variable& v : inputs) {
    saved_grads.push_back(v.requires_grad() && v.grad().defined() ? v.grad().clone() : Tensor());
    if (v.requires_grad()) Variable(v).zero_grad();  // a handle: clears the caller's leaf
  }

  Variable out = fn(inputs);
  MOH_CHECK(out.defined() && out.requires_grad(), "gradcheck: the output does not require grad");
  MOH_CHECK(is_floating(out.dtype()), "gradcheck: the output ", out.describe(), " is not floating point");
  Generator gen(options.seed);
  Tensor weight_tensor = normal(out.shape(), 0.0, 1.0, gen, DType::Float64).to(out.dtype());
  std::vector<double> weights = weight_tensor.to_vector<double>();
  backward(out, weight_tensor);
  out = Variable();

  GradcheckResult result;
  double worst_ratio = -1.0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].requires_grad()) continue;
    const Tensor& data = inputs[i].data();
    const Tensor grad = inputs[i].grad();
    std::vector<double> analytic =
        grad.defined() ? grad.to_vector<double>() : std::vector<double>(size_t(data.numel()));
    Variable caller = inputs[i];
    if (saved_grads[i].defined()) caller.set_grad(saved_grads[i]);
    else caller.zero_grad();
    double* base = data.data<double>();
    for (int64_t e = 0; e < data.numel(); ++e) {
      double* element = base + element_offset(data, e);
      const double original = *element;
      double f[2];
      for (int side = 0; side < 2; ++side) {
        *element = original + (side == 0 ? options.eps : -options.eps);
        NoGradGuard no_grad;
        f[side] = objective(fn(inputs), weights);
      }
      *element = original;
      const double numeric = (f[0] - f[1]) / (2.0 * options.eps);
      const double a = analytic[size_t(e)];
      const double abs_error = std::abs(a - numeric);
      const double scale = std::max(std::abs(a), std::abs(numeric));
      const double ratio = abs_error / (options.atol + options.rtol * std::abs(numeric));
      result.max_abs_error = std::max(result.max_abs_error, abs_error);
      if (scale > 0) result.max_rel_error = std::max(result.max_rel_error, abs_error / scale);
      if (!(ratio <= 1.0)) result.ok = false;  // also catches NaN
      if (ratio > worst_ratio || std::isnan(ratio)) {
        worst_ratio = std::isnan(ratio) ? INFINITY : ratio;
        result.worst_input = int64_t(i);
        result.worst_element = e;
        result.worst_analytic = a;
        result.worst_numeric = numeric;
      }
      ++result.elements_checked;
    }
  }
  std::ostringstream msg;
  msg << "gradcheck " << (result.ok ? "passed" : "FAILED") << ": " << result.elements_checked
      << " elements, max abs error " << result.max_abs_error << ", max rel error " << result.max_rel_error;
  if (result.worst_input >= 0) {
    msg << "; worst: input " << result.worst_input;
    if (!inputs[size_t(result.worst_input)].name().empty())
      msg << " '" << inputs[size_t(result.worst_input)].name() << "'";
    msg << " element " << result.worst_element << " analytic " << result.worst_analytic << " numeric "
        << result.worst_numeric;
  }
  result.message = msg.str();
  return result;
}

}  // namespace moh::ag
