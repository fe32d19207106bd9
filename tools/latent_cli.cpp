// `moh encode` / `moh decode` (see latent_cli.h). encode reads the run's dataset split in order through
// the evaluation pipeline (no augmentation; padded as in training), writes the posterior mean or a sample
// of every image with its label into an HDF5 latent file (data/latent_file.h) and measures the scale
// factor 1 / std of all stored latent values, which makes them unit-variance for a diffusion model.
// decode turns stored latents back into images: one PNG grid, or one PNG per latent in a folder.
#include "tools/latent_cli.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "autograd/tape.h"
#include "core/io/checked_write.h"
#include "core/ops.h"
#include "data/image_decode.h"
#include "data/image_grid.h"
#include "data/latent_file.h"
#include "data/latent_source.h"
#include "trainers/autoencoder_task.h"
#include "trainers/image_data_config.h"
#include "trainers/trainer.h"
#include "tools/cli_args.h"
#include "tools/exit_status.h"
#include "tools/progress_line.h"
#include "trainers/stored_autoencoder.h"

namespace moh {
namespace {

using cli::kOk;
using cli::UsageError;

const char* kEncodeHelp =
    "usage: moh encode RUN_DIR|CHECKPOINT --out LATENTS.h5 [--split train|test|FOLDER] [--posterior mean|sample]\n"
    "                  [--batch N] [--limit N] [--seed S] [key=value ...]\n"
    "Encodes a split of an autoencoder run's dataset (data.* of the stored config; overrides apply) with the\n"
    "run's newest valid checkpoint (or the given .h5 file) into an HDF5 latent file (docs/latents.md): the\n"
    "posterior mean (default) or a sample drawn with --seed (default 0) of every image, in dataset order,\n"
    "with its label, and the scale factor 1 / std of the stored latents. --split (default train) is the\n"
    "split read in order without augmentation (fashion_mnist: train or test; image_folder: a sub-folder);\n"
    "--limit keeps the first N images; --batch (default 256) images per forward pass. The file appears\n"
    "only when complete. Prints one JSON summary line with the timing.\n";

const char* kDecodeHelp =
    "usage: moh decode RUN_DIR|CHECKPOINT --latents LATENTS.h5|FAST_DIT_DIR --out GRID.png|DIR [--first I]\n"
    "                  [--count N] [--columns K] [--crop S] [key=value ...]\n"
    "Decodes latents (as stored: an HDF5 latent file or fast-DiT .npy folders, docs/latents.md) with an\n"
    "autoencoder run's decoder. --out ending in .png writes one grid of --columns (default 8) images per row;\n"
    "otherwise --out is a folder receiving one PNG per latent, named by its index (000000.png, ...). Latents\n"
    "--first (default 0) to --first + --count (default 64) are decoded; --crop S cuts the centre S x S of\n"
    "each image (e.g. 28 to undo Fashion-MNIST's padding to 32).\n";

int encode_command(int argc, char** argv) {
  const cli::Args args =
      cli::parse_args(argc, argv, 2, {"--out", "--split", "--posterior", "--batch", "--limit", "--seed"}, {});
  if (args.help) {
    std::cout << kEncodeHelp;
    return kOk;
  }
  const auto [target, overrides] = cli::target_and_overrides(args, kEncodeHelp);
  const std::string out = cli::required(args, "--out", kEncodeHelp);
  const std::string split = args.options.count("--split") ? args.options.at("--split") : "train";
  const std::string posterior = args.options.count("--posterior") ? args.options.at("--posterior") : "mean";
  if (posterior != "mean" && posterior != "sample")
    throw UsageError(str_cat("--posterior must be mean or sample, got '", posterior, "'"));
  const int64_t batch = cli::number<int64_t>(args, "--batch", 256), limit = cli::number<int64_t>(args, "--limit", 0);
  if (batch < 1) throw UsageError(str_cat("--batch must be at least 1, got ", batch));
  if (limit < 0) throw UsageError(str_cat("--limit must be >= 0, got ", limit));
  Generator noise(cli::number<uint64_t>(args, "--seed", 0));

  // The split to read becomes the evaluation split of the stored data config.
  StoredAutoencoder ae = load_stored_autoencoder(
      target, overrides, {"data.eval_split=" + split, str_cat("data.eval_limit=", limit)}, "moh encode");
  const Config& cfg = ae.run.config;
  WarningChannel warnings;
  const std::unique_ptr<ImageSource> data = make_image_source(cfg, PixelRange::SignedUnit, 0, warnings);
  const int64_t pad_to = cfg.get_int("data.pad_to"), n = data->eval_size();
  if (n == 0) MOH_FAIL("moh encode: the split '", split, "' holds no images");
  const int64_t side = pad_to == 0 ? data->image_size() : pad_to, f = ae.model->options().downsample_factor();
  LatentFileInfo info;
  info.count = n;
  info.latent_shape = {ae.model->options().latent_channels, side / f, side / f};
  info.num_classes = int64_t(data->class_names().size());
  info.posterior = posterior;
  LatentFileWriter writer(out, info);

  ag::NoGradGuard no_grad;
  cli::ProgressLine progress("encode", n, "images");
  double sum = 0, sum_sq = 0;
  data->for_each_eval_batch(0, n, batch, [&](const ImageBatch& b) {
    const LatentPosterior p = ae.model->encode(ag::Variable(pad_images(b.images, pad_to)));
    const Tensor z = (posterior == "mean" ? p.mean : p.sample(noise)).data().contiguous();
    for (double v : z.to_vector<double>()) sum += v, sum_sq += v * v;
    writer.write(z, b.labels);
    const double seconds = progress.seconds();
    const double rate = double(writer.written()) / std::max(seconds, 1e-9);
    progress.update(writer.written(), str_cat(", ", cli::format_fixed(rate, 1), " images/s"));
  });
  const double count = double(n) * double(shape_numel(info.latent_shape));
  const double mean = sum / count, std = std::sqrt(std::max(sum_sq / count - mean * mean, 0.0));
  if (!(std > 0)) MOH_FAIL("moh encode: the latents have zero variance; cannot derive a scale factor");
  writer.finish(1.0 / std);
  const double seconds = progress.seconds();
  const nlohmann::json summary{{"out", out},
                               {"checkpoint", ae.run.checkpoint},
                               {"split", split},
                               {"images", n},
                               {"latent_shape", info.latent_shape},
                               {"posterior", posterior},
                               {"latent_mean", mean},
                               {"latent_std", std},
                               {"scale_factor", 1.0 / std},
                               {"seconds", seconds},
                               {"images_per_s", double(n) / std::max(seconds, 1e-9)}};
  std::cout << summary.dump() << std::endl;
  return kOk;
}

int decode_command(int argc, char** argv) {
  const cli::Args args =
      cli::parse_args(argc, argv, 2, {"--latents", "--out", "--first", "--count", "--columns", "--crop"}, {});
  if (args.help) {
    std::cout << kDecodeHelp;
    return kOk;
  }
  const auto [target, overrides] = cli::target_and_overrides(args, kDecodeHelp);
  const std::string latents_path = cli::required(args, "--latents", kDecodeHelp);
  const std::string out = cli::required(args, "--out", kDecodeHelp);
  const int64_t first = cli::number<int64_t>(args, "--first", 0), wanted = cli::number<int64_t>(args, "--count", 64);
  const int64_t columns = cli::number<int64_t>(args, "--columns", 8), crop = cli::number<int64_t>(args, "--crop", 0);
  if (first < 0 || wanted < 1 || columns < 1 || crop < 0)
    throw UsageError("--first must be >= 0, --count and --columns >= 1, --crop >= 0");
  const std::unique_ptr<LatentSource> latents = open_latent_source(latents_path);
  if (first >= latents->size())
    throw UsageError(str_cat("--first ", first, " is past the ", latents->size(), " latents of '", latents_path, "'"));
  const int64_t count = std::min(wanted, latents->size() - first);
  StoredAutoencoder ae = load_stored_autoencoder(target, overrides, {}, "moh decode");
  if (latents->latent_shape()[0] != ae.model->options().latent_channels)
    MOH_FAIL("moh decode: '", latents_path, "' holds latents of ", latents->latent_shape()[0],
             " channels; the autoencoder of '", ae.run.checkpoint, "' decodes ", ae.model->options().latent_channels);
  const bool grid = std::filesystem::path(out).extension() == ".png";
  if (!grid) std::filesystem::create_directories(out);

  ag::NoGradGuard no_grad;
  cli::ProgressLine progress("decode", count, "latents");
  std::vector<Tensor> images;
  constexpr int64_t kBatch = 64;
  for (int64_t done = 0; done < count;) {
    const int64_t b = std::min(kBatch, count - done);
    std::vector<int64_t> indices(static_cast<size_t>(b));
    for (int64_t i = 0; i < b; ++i) indices[size_t(i)] = first + done + i;
    const Tensor decoded = centre_crop(ae.model->decode(ag::Variable(latents->read(indices).latents)).data(), crop);
    if (grid) {
      images.push_back(decoded.contiguous());
    } else {
      for (int64_t i = 0; i < b; ++i) {
        char name[32];
        std::snprintf(name, sizeof name, "%06lld.png", (long long)(first + done + i));
        const std::vector<uint8_t> png = encode_png(image_grid(decoded.narrow(0, i, 1), 1, -1.0, 1.0, 0));
        write_file_atomically((std::filesystem::path(out) / name).string(), std::string(png.begin(), png.end()));
      }
    }
    done += b;
    progress.update(done);
  }
  if (grid) {
    const std::vector<uint8_t> png = encode_png(image_grid(cat(images, 0), columns, -1.0, 1.0));
    write_file_atomically(out, std::string(png.begin(), png.end()));
  }
  const nlohmann::json summary{{"out", out}, {"latents", latents_path}, {"first", first}, {"count", count},
                               {"seconds", progress.seconds()}};
  std::cout << summary.dump() << std::endl;
  return kOk;
}

}  // namespace

bool is_latent_command(const std::string& command) { return command == "encode" || command == "decode"; }

int run_latent_command(int argc, char** argv) {
  const std::string command = argv[1];
  return cli::exit_status_of("moh " + command, [&] {
    return command == "encode" ? encode_command(argc, argv) : decode_command(argc, argv);
  });
}

}  // namespace moh
