// Epoch permutations and the resumable sampler (see epoch_sampler.h).
#include "data/epoch_sampler.h"

#include <algorithm>
#include <numeric>

#include "core/factory.h"

namespace moh {
namespace {
// Philox offsets: the shuffle stream of epoch e starts at e << 32; per-sample streams live in a
// different key (seed ^ kSampleKey) so they never overlap the shuffle words.
constexpr uint64_t kSampleKey = 0x5a3c9e1fd2b7a641ULL;
}  // namespace

std::vector<int64_t> epoch_permutation(uint64_t seed, int64_t epoch, int64_t n) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  if (n <= 1) return order;
  Generator g(seed, uint64_t(epoch) << 32);
  const auto words = uniform({n}, 0, 1, g, DType::Float64).to_vector<double>();
  for (int64_t i = n - 1; i > 0; --i)
    std::swap(order[size_t(i)], order[size_t(std::min<int64_t>(i, int64_t(words[size_t(i)] * double(i + 1))))]);
  return order;
}

Generator sample_generator(uint64_t seed, int64_t epoch, int64_t sample) {
  // 2^40 Philox words per epoch cover any dataset of up to 2^24 samples at 2^16 words each.
  return Generator(seed ^ kSampleKey, (uint64_t(epoch) << 40) + (uint64_t(sample) << 16));
}

EpochSampler::EpochSampler(int64_t size, uint64_t seed, std::string what)
    : size_(size), seed_(seed), what_(std::move(what)) {
  MOH_CHECK(size_ > 0, what_, ": cannot sample from an empty dataset");
  order_ = epoch_permutation(seed_, epoch_, size_);
}

std::vector<int64_t> EpochSampler::next(int64_t count, std::vector<int64_t>* epochs) {
  std::vector<int64_t> ids;
  ids.reserve(size_t(count));
  if (epochs) epochs->clear();
  while (int64_t(ids.size()) < count) {
    if (index_ == size_) {
      ++epoch_;
      index_ = 0;
      order_ = epoch_permutation(seed_, epoch_, size_);
    }
    ids.push_back(order_[size_t(index_++)]);
    if (epochs) epochs->push_back(epoch_);
  }
  return ids;
}

std::map<std::string, int64_t> EpochSampler::state() const {
  return {{"epoch", epoch_}, {"index", index_}, {"shuffle_seed", int64_t(seed_)}};
}

void EpochSampler::load_state(const std::map<std::string, int64_t>& state) {
  for (const char* key : {"epoch", "index"})
    MOH_CHECK(state.count(key), what_, ": the checkpoint's data state has no '", key, "'");
  const int64_t epoch = state.at("epoch"), index = state.at("index");
  MOH_CHECK(epoch >= 0 && index >= 0 && index <= size_, what_, ": data position (epoch ", epoch, ", index ", index,
            ") is outside an epoch of ", size_, " samples");
  if (state.count("shuffle_seed"))
    MOH_CHECK(uint64_t(state.at("shuffle_seed")) == seed_, what_, ": the checkpoint was shuffled with seed ",
              state.at("shuffle_seed"), " but this run uses ", int64_t(seed_), " (keep run.seed when resuming)");
  epoch_ = epoch;
  index_ = index;
  order_ = epoch_permutation(seed_, epoch_, size_);
}

}  // namespace moh
