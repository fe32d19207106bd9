// Fuzz target: open_latent_file (data/latent_file.h) on an HDF5 file and a read of every sample, as DiT
// training reaches a `moh encode` output (through core/io/hdf5_file and libhdf5).
#include "data/latent_file.h"

#include <numeric>

#include "core/factory.h"
#include "data/image_decode.h"  // read_file_bytes
#include "fuzz/fuzz_target.h"

namespace {

void read(const uint8_t* data, size_t size) {
  const auto source = moh::open_latent_file(moh::fuzz::scratch_file("input.h5", data, size));
  std::vector<int64_t> all(size_t(std::min<int64_t>(source->size(), 64)));
  std::iota(all.begin(), all.end(), 0);
  source->read(all);
}

void seeds(const moh::fuzz::AddSeed& add) {
  using namespace moh;
  const std::string path = (fuzz::scratch_dir() / "seed.h5").string();
  auto add_file = [&](const std::string& name, int64_t n, const Shape& shape, const char* posterior) {
    LatentFileWriter w(path, {n, shape, 3, posterior, 0.18215});
    Shape batch = shape;
    batch.insert(batch.begin(), n);
    w.write(full(batch, 0.25), zeros({n}, DType::Int64));
    w.finish();
    add(name, read_file_bytes(path));
  };
  add_file("four_latents.h5", 4, {4, 2, 2}, "mean");
  add_file("one_sample.h5", 1, {1, 1, 1}, "sample");
}

}  // namespace

MOH_FUZZ_TARGET(read, seeds)
