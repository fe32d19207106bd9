// `moh sample` (see sample_cli.h): the DiT of a stored run (EMA weights by
// eval.use_ema), the respaced reverse process, decoding by the autoencoder
// whose latents the run trained on, and the output files. Samples are drawn in
// batches, each from its own stream of --seed, split over the ranks under
// mpirun and gathered to rank 0, which alone reports progress and writes: the
// same command (same --num, --classes, --batch and --seed) writes the same bytes
// for any number of processes.
#include "tools/sample_cli.h"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/dist/launch_env.h"
#include "core/dist/world.h"
#include "core/factory.h"
#include "core/io/checked_write.h"
#include "core/io/npz.h"
#include "core/ops.h"
#include "data/image_grid.h"
#include "data/latent_source.h"
#include "tools/cli_args.h"
#include "tools/exit_status.h"
#include "tools/progress_line.h"
#include "trainers/dit_images.h"
#include "trainers/dit_task.h"
#include "trainers/stored_autoencoder.h"

namespace moh {
namespace {

using cli::kOk;
using cli::UsageError;
namespace fs = std::filesystem;

const char* kSampleHelp =
    "usage: moh sample RUN_DIR|CHECKPOINT --out DIR [--num N] [--classes 0,3,...] [--cfg S] [--cfg-channels K]\n       "
    "           [--steps N] [--sampler ddpm|ddim] [--eta E] [--seed S] [--batch B]\n                  [--autoencoder "
    "AE_RUN|CKPT] [--crop S] [--columns K] [--pngs] [key=value ...]\nSamples a DiT run (its newest valid checkpoint, "
    "or the given .h5; the EMA weights when the stored config\nor an override sets eval.use_ema) and decodes the "
    "latents with the autoencoder of --autoencoder or of\nthe run's data.autoencoder. --num (default 100) samples, "
    "labels cycling through --classes (default every\nclass), classifier-free guidance --cfg (default 1: none; DiT "
    "uses 4 for pictures, 1.5 for FID) on\n--cfg-channels latent channels (0, the default: all; 3: the DiT reference "
    "code), --steps (default 250)\nof the respaced process, --sampler ddpm (default) or ddim (--eta, default 0), "
    "--seed (default 0),\n--batch (default 100) samples per pass. --crop S cuts the centre S x S of each image (28 "
    "undoes\nFashion-MNIST's padding to 32). Writes DIR/samples.npz (arr_0 uint8 [N, H, W, C], arr_1 "
    "labels),\nDIR/grid.png (the first 100, --columns per row, default 10) and with --pngs DIR/images/NNNNNN.png.\n"
    "Under mpirun the batches are split over the processes; the files are the same for any process count.\n";

std::vector<int64_t> parse_classes(const std::string& text, int64_t num_classes) {
  std::vector<int64_t> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    int64_t c = -1;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), c);
    if (ec != std::errc() || end != item.data() + item.size() || c < 0 || c >= num_classes)
      throw UsageError(str_cat("--classes: '", item, "' is not a class in [0, ", num_classes, ")"));
    out.push_back(c);
  }
  if (out.empty()) throw UsageError("--classes: no class given");
  return out;
}

// The stored DiT run and its model with the weights to sample from.
struct StoredDit {
  StoredRun run;
  std::unique_ptr<DiT> model;
  double scale_factor = 1;
  std::string autoencoder;  // data.autoencoder of the run ("" when unset)
};

StoredDit load_stored_dit(const std::string& target, const std::vector<std::string>& overrides) {
  StoredDit d{open_stored_run(target, overrides, "moh sample"), nullptr};
  require_task(d.run, "dit", "moh sample", "a run of the dit task");
  const Config& cfg = d.run.config;
  // The latent shape, classes and scale factor are the training latents'.
  LatentSourceOptions options;
  if (cfg.has("data.scale_factor")) options.scale_factor = cfg.get_float("data.scale_factor");
  options.check_all_features = false;
  const std::unique_ptr<LatentSource> latents = open_latent_source(cfg.get_string("data.latents"), options);
  const Shape& shape = latents->latent_shape();
  Generator init(0);  // the weights are the checkpoint's
  d.model = std::make_unique<DiT>(dit_options_from_config(cfg, shape[0], shape[1], latents->num_classes()), init);
  d.model->load_state_dict(weights_to_evaluate(d.run));
  d.model->eval();
  d.scale_factor = latents->scale_factor();
  if (cfg.has("data.autoencoder")) d.autoencoder = cfg.get_string("data.autoencoder");
  return d;
}

void write_png(const fs::path& path, const Image& image) {
  const std::vector<uint8_t> png = encode_png(image);
  write_file_atomically(path.string(), std::string(png.begin(), png.end()));
}

int sample_command(int argc, char** argv) {
  const cli::Args args =
      cli::parse_args(argc, argv, 2,
                      {"--out", "--num", "--classes", "--cfg", "--cfg-channels", "--steps", "--sampler", "--eta",
                       "--seed", "--batch", "--autoencoder", "--crop", "--columns"},
                      {"--pngs"});
  if (args.help) {
    std::cout << kSampleHelp;
    return kOk;
  }
  const auto [target, overrides] = cli::target_and_overrides(args, kSampleHelp);
  const fs::path out = cli::required(args, "--out", kSampleHelp);
  const int64_t num = cli::number<int64_t>(args, "--num", 100), steps = cli::number<int64_t>(args, "--steps", 250);
  const int64_t batch = cli::number<int64_t>(args, "--batch", 100), crop = cli::number<int64_t>(args, "--crop", 0);
  const int64_t columns = cli::number<int64_t>(args, "--columns", 10);
  GuidanceOptions guidance{cli::number<double>(args, "--cfg", 1.0), cli::number<int64_t>(args, "--cfg-channels", 0)};
  SampleLoopOptions loop;
  try {
    loop.sampler = parse_diffusion_sampler(args.options.count("--sampler") ? args.options.at("--sampler") : "ddpm");
  } catch (const Error& e) {
    throw UsageError(str_cat("--sampler: ", e.what()));
  }
  loop.eta = cli::number<double>(args, "--eta", 0.0);
  if (num < 1 || steps < 1 || batch < 1 || columns < 1 || crop < 0 || loop.eta < 0 || guidance.scale < 0)
    throw UsageError("--num, --steps, --batch and --columns must be >= 1; --crop, --eta and --cfg >= 0");
  const uint64_t seed = cli::number<uint64_t>(args, "--seed", 0);

  StoredDit dit = load_stored_dit(target, overrides);
  const DitOptions& o = dit.model->options();
  const std::vector<int64_t> classes =
      args.options.count("--classes") ? parse_classes(args.options.at("--classes"), o.num_classes) : [&] {
        std::vector<int64_t> all(size_t(o.num_classes));
        for (int64_t c = 0; c < o.num_classes; ++c) all[size_t(c)] = c;
        return all;
      }();
  const std::string ae_target =
      args.options.count("--autoencoder") ? args.options.at("--autoencoder") : dit.autoencoder;
  if (ae_target.empty())
    throw UsageError(str_cat("moh sample: '", dit.run.checkpoint,
                             "' names no autoencoder (data.autoencoder); pass --autoencoder AE_RUN"));
  const StoredAutoencoder ae = load_stored_autoencoder(ae_target, {}, {}, "moh sample");
  const DiffusionOptions process = diffusion_options_from_config(dit.run.config);
  if (steps > process.steps)
    throw UsageError(str_cat("--steps ", steps, " is more than the ", process.steps, " the model was trained on"));
  DitImageOptions options;
  options.steps = steps, options.loop = loop, options.guidance = guidance, options.crop = crop, options.batch = batch;

  std::vector<int64_t> labels(static_cast<size_t>(num));
  for (int64_t i = 0; i < num; ++i) labels[size_t(i)] = classes[size_t(i) % classes.size()];
  const bool writer = dist::launch_env().rank == 0;  // under mpirun, rank 0 speaks for the job
  const int64_t ranks = dist::world().size();
  std::optional<cli::ProgressLine> progress;  // rank 0's share, scaled to the whole job
  if (writer) progress.emplace("sample", num, "samples");
  const Tensor all = sample_dit_images(*dit.model, process, *ae.model, dit.scale_factor,
                                       from_vector<int64_t>(labels, {num}), options, seed,
                                       [&](int64_t done, int64_t step, int64_t total) {
                                         if (progress)
                                           progress->update(std::min(num - 1, done * ranks),
                                                            str_cat(" (batch step ", step, "/", total, ")"));
                                       });
  if (!writer) return kOk;
  progress->update(num);
  fs::create_directories(out);
  if (args.options.count("--pngs")) {
    fs::create_directories(out / "images");
    for (int64_t i = 0; i < num; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "%06lld.png", (long long)i);
      write_png(out / "images" / name, image_grid(all.narrow(0, i, 1), 1, -1.0, 1.0, 0));
    }
  }
  save_npz((out / "samples.npz").string(),
           {{"arr_0", images_to_uint8_nhwc(all, -1.0, 1.0)}, {"arr_1", from_vector<int64_t>(labels, {num})}});
  write_png(out / "grid.png", image_grid(all.narrow(0, 0, std::min<int64_t>(num, 100)), columns, -1.0, 1.0));
  const nlohmann::json summary{{"out", out.string()},
                               {"checkpoint", dit.run.checkpoint},
                               {"autoencoder", ae.run.checkpoint},
                               {"weights", dit.run.config.get_bool("eval.use_ema") ? "ema" : "trained"},
                               {"samples", num},
                               {"steps", steps},
                               {"sampler", loop.sampler == DiffusionSampler::Ddpm ? "ddpm" : "ddim"},
                               {"cfg", guidance.scale},
                               {"processes", ranks},
                               {"seconds", progress->seconds()}};
  std::cout << summary.dump() << std::endl;
  return kOk;
}

}  // namespace

int run_sample_command(int argc, char** argv) {
  return cli::exit_status_of("moh sample", [&] { return sample_command(argc, argv); });
}

}  // namespace moh
