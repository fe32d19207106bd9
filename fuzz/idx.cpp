// Fuzz target: read_idx (data/idx.h) on a file as given: raw IDX, or gzip (the seeds hold both).
#include "data/idx.h"

#include "fuzz/idx_seeds.h"

namespace {

void read(const uint8_t* data, size_t size) { moh::read_idx(moh::fuzz::scratch_file("input.idx", data, size)); }

void seeds(const moh::fuzz::AddSeed& add) {
  for (const auto& [name, bytes] : moh::fuzz::idx_seed_files()) {
    add(name, bytes);
    add(name + ".gz", moh::fuzz::gzip(bytes.data(), bytes.size()));
  }
}

}  // namespace

MOH_FUZZ_TARGET(read, seeds)
