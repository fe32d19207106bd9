// Helpers shared by the softmax / norm / cross-entropy / golden tests: seeded random tensors,
// element-wise closeness against double references, and central finite differences.
// Closeness: |actual - expected| <= atol + rtol * (|expected| + 0.01 * max|expected|), element-wise.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/random.h"
#include "core/tensor.h"

namespace moh::nn_test {

inline Tensor randn(const Shape& shape, DType dtype, uint64_t seed, double stddev = 1.0) {
  Generator gen(seed);
  return normal(shape, 0.0, stddev, gen, dtype);
}

inline void expect_close(const std::vector<double>& actual, const std::vector<double>& expected, double rtol,
                         const std::string& what, double atol = 0) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  double scale = 0;
  for (double e : expected) scale = std::max(scale, std::abs(e));
  int reported = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double tol = atol + rtol * (std::abs(expected[i]) + 0.01 * scale);
    const bool ok = std::abs(actual[i] - expected[i]) <= tol || (std::isnan(actual[i]) && std::isnan(expected[i]));
    if (!ok && reported++ < 5)
      ADD_FAILURE() << what << ": element " << i << " is " << actual[i] << ", expected " << expected[i]
                    << " (tol " << tol << ")";
  }
}

inline void expect_close(const Tensor& actual, const std::vector<double>& expected, double rtol,
                         const std::string& what, double atol = 0) {
  expect_close(actual.to_vector<double>(), expected, rtol, what, atol);
}

inline void expect_close(const Tensor& actual, const Tensor& expected, double rtol, const std::string& what,
                         double atol = 0) {
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  expect_close(actual.to_vector<double>(), expected.to_vector<double>(), rtol, what, atol);
}

// d f / d x_i by central differences with step h, for every i.
inline std::vector<double> finite_diff(const std::function<double(const std::vector<double>&)>& f,
                                       std::vector<double> x, double h = 1e-5) {
  std::vector<double> grad(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double x0 = x[i];
    x[i] = x0 + h;
    const double fp = f(x);
    x[i] = x0 - h;
    const double fm = f(x);
    x[i] = x0;
    grad[i] = (fp - fm) / (2 * h);
  }
  return grad;
}

// sum_i a_i * b_i in double.
inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace moh::nn_test
