// Epoch permutations and the resumable sampler (see epoch_sampler.h).
#include "data/epoch_sampler.h"

#include <algorithm>
#include <numeric>

#include "core/dist/world.h"
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

SamplerShard process_shard() {
  const dist::Communicator& world = dist::world();
  return {world.rank(), world.size()};
}

EpochSampler::EpochSampler(int64_t size, uint64_t seed, std::string what, SamplerShard shard)
    : size_(size), seed_(seed), what_(std::move(what)), shard_(shard) {
  MOH_CHECK(size_ > 0, what_, ": cannot sample from an empty dataset");
  MOH_CHECK(shard_.world >= 1 && shard_.rank >= 0 && shard_.rank < shard_.world, what_, ": shard rank ",
            shard_.rank, " is outside a world of size ", shard_.world);
  order_ = epoch_permutation(seed_, epoch_, size_);
}

std::vector<int64_t> EpochSampler::next(int64_t count, std::vector<int64_t>* epochs) {
  MOH_CHECK(count >= 0, what_, ": cannot draw ", count, " samples");
  std::vector<int64_t> ids;
  ids.reserve(size_t(count));
  if (epochs) epochs->clear();
  const int64_t first = shard_.rank * count, end = first + count, global = count * shard_.world;
  for (int64_t k = 0; k < global; ++k) {
    if (index_ == size_) {
      ++epoch_;
      index_ = 0;
      order_ = epoch_permutation(seed_, epoch_, size_);
    }
    const int64_t id = order_[size_t(index_++)];
    if (k < first || k >= end) continue;
    ids.push_back(id);
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
