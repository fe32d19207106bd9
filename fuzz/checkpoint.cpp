// Fuzz target: load_checkpoint (trainers/checkpoint.h) on an HDF5 file, as `moh eval` and train.resume
// reach it (through core/io/hdf5_file and libhdf5).
#include "trainers/checkpoint.h"

#include "core/factory.h"
#include "core/ops.h"
#include "data/image_decode.h"  // read_file_bytes
#include "fuzz/fuzz_target.h"

namespace {

void read(const uint8_t* data, size_t size) {
  moh::load_checkpoint(moh::fuzz::scratch_file("input.h5", data, size));
}

void seeds(const moh::fuzz::AddSeed& add) {
  using namespace moh;
  const std::string path = (fuzz::scratch_dir() / "seed.h5").string();
  auto add_file = [&](const std::string& name, const CheckpointData& d) {
    save_checkpoint(path, d);
    add(name, read_file_bytes(path));
  };
  CheckpointData d;
  d.step = 7;
  d.epoch = 1;
  d.config_text = "task: vit\nrun:\n  name: tiny\n";
  add_file("empty_model.h5", d);
  Tensor base = arange(-3.0, 3.0, 1.0, DType::Float64).view({2, 3});
  d.model = {{"blocks.0.attn.qkv.weight", base.to(DType::Float32)},
             {"bf16", base.to(DType::BFloat16)},
             {"i64", base.to(DType::Int64)},
             {"mask", gt(base, 0.5)},
             {"scale", scalar_tensor(2.5, DType::Float32)},
             {"empty", zeros({0, 3})}};
  d.ema = {{"blocks.0.attn.qkv.weight", base.to(DType::Float32)}};
  d.optimizer = {{"blocks.0.attn.qkv.weight/exp_avg", full({2, 3}, 0.125)},
                 {"step", scalar_tensor(7.0, DType::Int64)}};
  d.scheduler = {{"last_lr", 3e-4}};
  d.rng = {{"dropout", {42, 1000}}};
  d.data = {{"epoch", 1}, {"index", 12}};
  d.metrics = {{"val_loss", 0.5}};
  add_file("full.h5", d);
}

}  // namespace

MOH_FUZZ_TARGET(read, seeds)
