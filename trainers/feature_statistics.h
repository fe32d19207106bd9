// Gaussian statistics of a set of feature vectors (classifier features of images, for the Fréchet
// distance of trainers/frechet_distance.h): the count, the mean and the unbiased covariance, in float64.
// FeatureAccumulator streams [B, d] batches in: it subtracts a fixed shift (the first row it saw) from
// every row, then merges each batch's own mean and centred scatter matrix into the running ones (Chan
// et al.'s pairwise update). So the result does not depend on how the rows were batched beyond
// rounding, and a large common offset (features ~1e4 with small spread) costs no accuracy.
// Statistics files are .npz archives with float64 `mu` [d], float64 `sigma` [d, d] (the keys of the
// ADM / pytorch-fid reference batches: np.load(path)['mu'] works) and int64 `count` [] (optional when
// reading: those reference batches store none, and the count then reads as 0, unknown).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace moh {

struct FeatureStats {
  int64_t count = 0;  // feature rows; 0 when a statistics file did not say
  std::vector<double> mu;     // d
  std::vector<double> sigma;  // d*d row-major, symmetric; divided by count - 1, as numpy.cov
  int64_t dim() const { return int64_t(mu.size()); }
};

class FeatureAccumulator {
 public:
  explicit FeatureAccumulator(int64_t dim);

  // Folds in the rows of `features` [B, dim] (any floating dtype, CPU, any strides; B may be 0).
  // Every value must be finite.
  void add(const Tensor& features);
  // The statistics of every row added so far; needs at least 2 rows.
  FeatureStats finish() const;

  int64_t dim() const { return dim_; }
  int64_t count() const { return count_; }

 private:
  int64_t dim_;
  int64_t count_ = 0;
  std::vector<double> shift_;    // dim: the first row added; the sums below are of x - shift_
  std::vector<double> mean_;     // dim: mean of x - shift_
  std::vector<double> scatter_;  // dim*dim: sum over rows of (x - mean)(x - mean)^T
};

// Writes `stats` to an .npz file (atomically); the stats must be consistent (sizes d and d*d).
void save_feature_stats(const std::string& path, const FeatureStats& stats);
// Reads a statistics file, checking that mu and sigma are present with consistent shapes,
// floating mu and sigma, an integer count >= 2 when present, finite values and a sigma symmetric to a relative 1e-6;
// other members (an ADM reference batch's arr_0) are ignored. Errors name the file and the key.
FeatureStats load_feature_stats(const std::string& path);

}  // namespace moh
