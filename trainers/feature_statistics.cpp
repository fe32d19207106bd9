// Streaming feature statistics and their .npz files.
#include "trainers/feature_statistics.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/factory.h"
#include "core/io/npz.h"
#include "core/ops.h"

namespace moh {
namespace {

constexpr double kSigmaSymmetryTolerance = 1e-6;  // relative; float32-rounded files pass, a wrong layout does not

int64_t checked_dim(int64_t dim) {
  MOH_CHECK(dim >= 1, "FeatureAccumulator: the feature dimension must be at least 1, got ", dim);
  return dim;
}

}  // namespace

FeatureAccumulator::FeatureAccumulator(int64_t dim)
    : dim_(checked_dim(dim)), mean_(size_t(dim_), 0.0), scatter_(size_t(dim_ * dim_), 0.0) {}

void FeatureAccumulator::add(const Tensor& features) {
  MOH_CHECK(features.defined() && features.dim() == 2 && features.size(1) == dim_ && is_floating(features.dtype()) &&
                features.device().is_cpu(),
            "FeatureAccumulator::add: expected a floating CPU tensor [B, ", dim_, "], got ",
            features.defined() ? describe(features) : std::string("an undefined tensor"));
  const int64_t rows = features.size(0);
  if (rows == 0) return;
  std::vector<double> x = features.to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i)
    MOH_CHECK(std::isfinite(x[i]), "FeatureAccumulator::add: feature ", int64_t(i) % dim_, " of row ",
              int64_t(i) / dim_, " (of ", rows, ") is ", x[i]);

  if (count_ == 0) shift_.assign(x.begin(), x.begin() + dim_);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < dim_; ++j) x[r * dim_ + j] -= shift_[j];

  std::vector<double> batch_mean(size_t(dim_), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < dim_; ++j) batch_mean[j] += x[r * dim_ + j];
  for (double& m : batch_mean) m /= double(rows);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < dim_; ++j) x[r * dim_ + j] -= batch_mean[j];
  const Tensor centred = from_vector<double>(x, {rows, dim_});
  const Tensor batch_scatter = matmul(centred.t(), centred);  // contiguous [dim, dim]
  const double* bs = batch_scatter.data<double>();

  // Chan's merge of (count_, mean_, scatter_) with (rows, batch_mean, batch_scatter).
  const double total = double(count_ + rows);
  const double weight = double(count_) * double(rows) / total;
  std::vector<double> delta(static_cast<size_t>(dim_));
  for (int64_t j = 0; j < dim_; ++j) delta[j] = batch_mean[j] - mean_[j];
  for (int64_t i = 0; i < dim_; ++i)
    for (int64_t j = 0; j < dim_; ++j) scatter_[i * dim_ + j] += bs[i * dim_ + j] + weight * delta[i] * delta[j];
  for (int64_t j = 0; j < dim_; ++j) mean_[j] += delta[j] * (double(rows) / total);
  count_ += rows;
}

FeatureStats FeatureAccumulator::finish() const {
  MOH_CHECK(count_ >= 2, "FeatureAccumulator::finish: an unbiased covariance needs at least 2 feature rows, got ",
            count_);
  FeatureStats stats{count_, std::vector<double>(size_t(dim_)), std::vector<double>(scatter_.size())};
  for (int64_t j = 0; j < dim_; ++j) stats.mu[j] = shift_[j] + mean_[j];
  const double denominator = double(count_ - 1);
  for (int64_t i = 0; i < dim_; ++i)
    for (int64_t j = 0; j < dim_; ++j)
      stats.sigma[i * dim_ + j] = 0.5 * (scatter_[i * dim_ + j] + scatter_[j * dim_ + i]) / denominator;
  return stats;
}

void save_feature_stats(const std::string& path, const FeatureStats& stats) {
  const int64_t d = stats.dim();
  MOH_CHECK(d >= 1 && int64_t(stats.sigma.size()) == d * d, "save_feature_stats: ", path, ": mu has ", d,
            " values and sigma ", stats.sigma.size(), ", expected d >= 1 and d*d");
  MOH_CHECK(stats.count >= 2, "save_feature_stats: ", path, ": count must be at least 2, got ", stats.count);
  save_npz(path, {{"mu", from_vector<double>(stats.mu, {d})},
                  {"sigma", from_vector<double>(stats.sigma, {d, d})},
                  {"count", from_vector<int64_t>({stats.count}, {})}});
}

FeatureStats load_feature_stats(const std::string& path) {
  const std::map<std::string, Tensor> arrays = load_npz(path);
  const std::string where = "load_feature_stats: " + path;
  auto member = [&](const std::string& key) -> const Tensor& {
    const auto it = arrays.find(key);
    if (it != arrays.end()) return it->second;
    std::string held;
    for (const auto& entry : arrays) held += (held.empty() ? "" : ", ") + entry.first;
    MOH_FAIL(where, ": no member '", key, "' (the file holds: ", held.empty() ? "nothing" : held, ")");
  };
  auto finite_values = [&](const std::string& key, const Tensor& t) {
    std::vector<double> values = t.to_vector<double>();
    for (size_t i = 0; i < values.size(); ++i)
      MOH_CHECK(std::isfinite(values[i]), where, ": '", key, "' entry ", i, " is ", values[i]);
    return values;
  };

  const Tensor& mu = member("mu");
  MOH_CHECK(mu.dim() == 1 && mu.numel() >= 1 && is_floating(mu.dtype()), where, ": 'mu' is ", describe(mu),
            ", expected a non-empty 1-D float array");
  const int64_t d = mu.numel();
  const Tensor& sigma = member("sigma");
  MOH_CHECK(sigma.shape() == Shape({d, d}) && is_floating(sigma.dtype()), where, ": 'sigma' is ", describe(sigma),
            ", expected a float array [", d, ", ", d, "] (d from 'mu')");
  int64_t rows = 0;  // unknown: ADM / pytorch-fid reference statistics store no count
  if (arrays.count("count")) {
    const Tensor& count = arrays.at("count");
    MOH_CHECK(count.numel() == 1 && count.dim() <= 1 && (count.dtype() == DType::Int64 || count.dtype() == DType::Int32),
              where, ": 'count' is ", describe(count), ", expected one integer");
    rows = count.item<int64_t>();
    MOH_CHECK(rows >= 2, where, ": 'count' is ", rows, ", expected at least 2");
  }
  FeatureStats stats{rows, finite_values("mu", mu), finite_values("sigma", sigma)};
  const std::vector<double>& s = stats.sigma;
  for (int64_t i = 0; i < d; ++i)
    for (int64_t j = i + 1; j < d; ++j) {
      const double upper = s[i * d + j], lower = s[j * d + i];
      const double magnitude =
          std::max({std::abs(upper), std::abs(lower), std::sqrt(std::abs(s[i * d + i] * s[j * d + j]))});
      MOH_CHECK(std::abs(upper - lower) <= kSigmaSymmetryTolerance * magnitude, where, ": 'sigma' is not symmetric: (",
                i, ", ", j, ") = ", upper, " but (", j, ", ", i, ") = ", lower);
    }
  return stats;
}

}  // namespace moh
