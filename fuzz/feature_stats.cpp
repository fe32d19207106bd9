// Fuzz target: load_feature_stats (trainers/feature_statistics.h) on a file, as `moh fid --ref STATS.npz`
// reaches it: the npz container, then the mu / sigma / count checks (shapes, dtypes, finiteness, symmetry).
#include "trainers/feature_statistics.h"

#include "core/factory.h"
#include "core/io/npz.h"
#include "data/image_decode.h"  // read_file_bytes
#include "fuzz/fuzz_target.h"

namespace {

void read(const uint8_t* data, size_t size) {
  moh::load_feature_stats(moh::fuzz::scratch_file("input.npz", data, size));
}

void seeds(const moh::fuzz::AddSeed& add) {
  using namespace moh;
  const std::string path = (fuzz::scratch_dir() / "seed.npz").string();
  FeatureAccumulator acc(3);
  acc.add(from_vector<double>({1, 2, 3, 2, 0, 1, 4, 1, 1, 0, 2, 5}, {4, 3}));
  save_feature_stats(path, acc.finish());
  add("stats.npz", read_file_bytes(path));
  const FeatureStats s = acc.finish();
  save_npz(path, {{"mu", from_vector<double>(s.mu, {3})}, {"sigma", from_vector<double>(s.sigma, {3, 3})}});
  add("adm_no_count.npz", read_file_bytes(path));
}

}  // namespace

MOH_FUZZ_TARGET(read, seeds)
