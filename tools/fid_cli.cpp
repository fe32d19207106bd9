// `moh fid` (see fid_cli.h). Features are the classifier's pooled
// representation (ViT: the normalised class token or mean token its head
// reads), images normalised exactly as the classifier's own evaluation data.
// Fréchet distances are biased upwards at small N, so the floor and the ceiling
// use as many images as the samples: the three numbers are comparable with each
// other, not with FIDs at another N or network.
#include "tools/fid_cli.h"

#include <iostream>

#include <nlohmann/json.hpp>

#include "core/factory.h"
#include "core/io/npz.h"
#include "core/ops.h"
#include "core/random.h"
#include "tools/cli_args.h"
#include "tools/exit_status.h"
#include "tools/progress_line.h"
#include "trainers/classifier_features.h"
#include "trainers/frechet_distance.h"
#include "trainers/stored_run.h"

namespace moh {
namespace {

using cli::kOk;
using cli::UsageError;

const char* kFidHelp =
    "usage: moh fid SAMPLES.npz --features CLASSIFIER_RUN [--ref test|train|REF.npz] [--save-ref STATS.npz]\n          "
    "     [--batch B] [key=value ...]\nFréchet distance between SAMPLES (arr_0: uint8 [N, H, W, 1] images as moh "
    "sample writes them, labels in\narr_1; or feature statistics mu/sigma) and the reference --ref (default test: the "
    "classifier's held-out\nsplit, data.eval_limit of its config applying; train; or an .npz of images or statistics), "
    "in the\nfeature space of a vit run's classifier\n(--features: RUN_DIR or checkpoint; key=value overrides apply to "
    "its config, e.g. data.root=...).\nPrints the score beside a floor (N training images vs the reference) and a "
    "ceiling (N uniform-noise\nimages), and the classifier's accuracy on labelled samples. --save-ref writes the "
    "reference statistics\n(mu, sigma, count) for later runs. --batch (default 500) images per forward pass.\n";

// An .npz of images (arr_0, labels in arr_1 when present) or of statistics (mu,
// sigma).
struct NpzInput {
  std::optional<FeatureStats> stats;
  Tensor images, labels;
};

NpzInput read_input(const std::string& path) {
  const std::map<std::string, Tensor> arrays = load_npz(path);
  if (arrays.count("mu")) return {load_feature_stats(path), {}, {}};
  if (!arrays.count("arr_0")) MOH_FAIL("moh fid: '", path, "' holds neither images (arr_0) nor statistics (mu, sigma)");
  NpzInput in{std::nullopt, arrays.at("arr_0"), {}};
  if (arrays.count("arr_1")) {
    in.labels = arrays.at("arr_1").to(DType::Int64);
    if (in.labels.dim() != 1 || in.labels.size(0) != in.images.size(0))
      MOH_FAIL("moh fid: '", path, "' arr_1 must hold one label per image, got ", describe(in.labels), " for ",
               describe(in.images));
  }
  return in;
}

int fid_command(int argc, char** argv) {
  const cli::Args args = cli::parse_args(argc, argv, 2, {"--features", "--ref", "--save-ref", "--batch"}, {});
  if (args.help) {
    std::cout << kFidHelp;
    return kOk;
  }
  const auto [samples_path, overrides] = cli::target_and_overrides(args, kFidHelp, "SAMPLES.npz");
  const std::string features = cli::required(args, "--features", kFidHelp);
  const std::string ref = args.options.count("--ref") ? args.options.at("--ref") : "test";
  const int64_t batch = cli::number<int64_t>(args, "--batch", 500);
  if (batch < 1) throw UsageError(str_cat("--batch must be at least 1, got ", batch));

  cli::ProgressLine clock("fid", 4, "sets");
  const FeatureClassifier classifier(features, overrides, batch, "moh fid");
  const NpzInput samples = read_input(samples_path);
  std::optional<double> accuracy;
  FeatureStats sample_stats;
  if (samples.stats) {
    sample_stats = *samples.stats;
  } else {
    const Tensor labels = samples.labels.defined() ? samples.labels : zeros({samples.images.size(0)}, DType::Int64);
    const ClassifierFeatures f = classifier.of_images(samples.images, labels, "moh fid: '" + samples_path + "' arr_0");
    sample_stats = f.stats;
    if (samples.labels.defined()) accuracy = f.top1;
  }
  const int64_t n = sample_stats.count;
  if (n < 2)
    throw UsageError(str_cat("'", samples_path,
                             "' states no sample count; the floor and the ceiling are measured at the samples' N: pass "
                             "the images (arr_0) or statistics with a count"));
  clock.update(1);

  FeatureStats ref_stats;
  if (ref == "test" || ref == "train") {
    ref_stats = classifier.of_split(ref, 0).stats;
  } else {
    const NpzInput r = read_input(ref);
    ref_stats =
        r.stats
            ? *r.stats
            : classifier.of_images(r.images, zeros({r.images.size(0)}, DType::Int64), "moh fid: '" + ref + "' arr_0")
                  .stats;
  }
  if (args.options.count("--save-ref")) save_feature_stats(args.options.at("--save-ref"), ref_stats);
  clock.update(2);

  // The floor: real training images, as many as the samples (the first N;
  // against the training split itself the floor would be a self-comparison, so
  // it reads the other split then).
  const FeatureStats real = classifier.of_split(ref == "train" ? "test" : "train", n).stats;
  clock.update(3);
  const FeatureStats noise_stats = classifier.of_noise(n).stats;
  clock.update(4);

  const double fid = frechet_distance(sample_stats, ref_stats), floor = frechet_distance(real, ref_stats),
               ceiling = frechet_distance(noise_stats, ref_stats);
  std::cerr << "moh fid: FID " << fid << " (floor " << floor << ", ceiling " << ceiling << ") at N = " << n;
  if (accuracy) std::cerr << "; classifier accuracy on the samples " << 100 * *accuracy << "%";
  std::cerr << "\n";
  nlohmann::json summary{{"fid", fid},
                         {"floor", floor},
                         {"ceiling", ceiling},
                         {"samples", n},
                         {"reference", ref},
                         {"reference_images", ref_stats.count},
                         {"classifier", classifier.checkpoint()},
                         {"feature_dim", sample_stats.dim()},
                         {"seconds", clock.seconds()}};
  if (accuracy) summary["sample_accuracy"] = *accuracy;
  std::cout << summary.dump() << std::endl;
  return kOk;
}

}  // namespace

int run_fid_command(int argc, char** argv) {
  return cli::exit_status_of("moh fid", [&] { return fid_command(argc, argv); });
}

}  // namespace moh
