// `moh fid` (see fid_cli.h). Features are the classifier's pooled representation (ViT: the normalised
// class token or mean token its head reads), images normalised exactly as the classifier's own evaluation
// data. Fréchet distances are biased upwards at small N, so the floor and the ceiling use as many images as
// the samples: the three numbers are comparable with each other, not with FIDs at another N or network.
#include "tools/fid_cli.h"

#include <iostream>

#include <nlohmann/json.hpp>

#include "core/factory.h"
#include "core/io/npz.h"
#include "core/ops.h"
#include "core/random.h"
#include "trainers/classifier_features.h"
#include "trainers/frechet_distance.h"
#include "trainers/image_data_config.h"
#include "trainers/trainer.h"
#include "trainers/vit_task.h"
#include "tools/cli_args.h"
#include "tools/exit_status.h"
#include "tools/progress_line.h"
#include "tools/stored_run.h"

namespace moh {
namespace {

using cli::kOk;
using cli::UsageError;

const char* kFidHelp =
    "usage: moh fid SAMPLES.npz --features CLASSIFIER_RUN [--ref test|train|REF.npz] [--save-ref STATS.npz]\n"
    "               [--batch B] [key=value ...]\n"
    "Fréchet distance between SAMPLES (arr_0: uint8 [N, H, W, 1] images as moh sample writes them, labels in\n"
    "arr_1; or feature statistics mu/sigma) and the reference --ref (default test: the classifier's held-out\n"
    "split, data.eval_limit of its config applying; train; or an .npz of images or statistics), in the\n"
    "feature space of a vit run's classifier\n"
    "(--features: RUN_DIR or checkpoint; key=value overrides apply to its config, e.g. data.root=...).\n"
    "Prints the score beside a floor (N training images vs the reference) and a ceiling (N uniform-noise\n"
    "images), and the classifier's accuracy on labelled samples. --save-ref writes the reference statistics\n"
    "(mu, sigma, count) for later runs. --batch (default 500) images per forward pass.\n";

// The classifier of a vit run with its evaluation weights, and a way to read images through its config.
struct Classifier {
  cli::StoredRun run;
  std::unique_ptr<VisionTransformer> model;
  std::vector<std::string> overrides;
  int64_t batch = 500;

  // The run's dataset with `extra` overrides (data.eval_split, data.eval_limit).
  std::unique_ptr<ImageSource> dataset(const std::vector<std::string>& extra) const {
    std::vector<std::string> all = overrides;
    all.insert(all.end(), extra.begin(), extra.end());
    const Config cfg = Config::parse(run.data.config_text, training_schema("vit"), run.checkpoint + " (stored config)",
                                     all);
    WarningChannel warnings;
    return make_image_source(cfg, PixelRange::Standardized, 0, warnings);
  }
  // The split's first `limit` images (0: as many as the run's data.eval_limit keeps).
  ClassifierFeatures of_split(const std::string& split, int64_t limit) const {
    std::vector<std::string> extra{"data.eval_split=" + split};
    if (limit > 0) extra.push_back(str_cat("data.eval_limit=", limit));
    const auto data = dataset(extra);
    return classifier_features(*model, *data, 0, batch);
  }
  // uint8 [N, H, W, 1] images with int64 [N] labels (zeros when unlabelled).
  ClassifierFeatures of_images(const Tensor& nhwc, const Tensor& labels, const std::string& what) const {
    const int64_t side = model->options().img_size;
    if (nhwc.dtype() != DType::UInt8 || nhwc.dim() != 4 || nhwc.size(3) != 1 || nhwc.size(1) != side ||
        nhwc.size(2) != side)
      MOH_FAIL("moh fid: ", what, " must hold uint8 [N, ", side, ", ", side, ", 1] images (the classifier's size), got ",
               describe(nhwc));
    ImageDataset images{nhwc.reshape({nhwc.size(0), side, side}).contiguous(), labels,
                        fashion_mnist_class_names()};
    const auto data = make_image_source_over(run.config, PixelRange::Standardized, std::move(images));
    return classifier_features(*model, *data, 0, batch);
  }
};

Classifier load_classifier(const std::string& target, const std::vector<std::string>& overrides, int64_t batch) {
  Classifier c{cli::open_stored_run(target, overrides, "moh fid"), nullptr, overrides, batch};
  if (c.run.task != "vit")
    throw UsageError(str_cat("--features: '", c.run.checkpoint, "' is a checkpoint of a '", c.run.task,
                             "' run; moh fid needs an image classifier (a vit run)"));
  const auto data = c.dataset({"data.eval_limit=2"});
  Generator init(0);  // the weights are the checkpoint's
  c.model = std::make_unique<VisionTransformer>(vit_options_from_config(c.run.config, *data), init);
  c.model->load_state_dict(cli::weights_to_evaluate(c.run));
  c.model->eval();
  return c;
}

// An .npz of images (arr_0, labels in arr_1 when present) or of statistics (mu, sigma).
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
  std::string samples_path;
  std::vector<std::string> overrides;
  for (const std::string& arg : args.positional) {
    if (arg.find('=') != std::string::npos) overrides.push_back(arg);
    else if (samples_path.empty()) samples_path = arg;
    else throw UsageError(str_cat("unexpected argument '", arg, "' (overrides look like key=value)"));
  }
  if (samples_path.empty()) throw UsageError(str_cat("missing SAMPLES.npz\n", kFidHelp));
  const std::string features = cli::required(args, "--features", kFidHelp);
  const std::string ref = args.options.count("--ref") ? args.options.at("--ref") : "test";
  const int64_t batch = cli::number<int64_t>(args, "--batch", 500);
  if (batch < 1) throw UsageError(str_cat("--batch must be at least 1, got ", batch));

  cli::ProgressLine clock("fid", 4, "sets");
  const Classifier classifier = load_classifier(features, overrides, batch);
  const NpzInput samples = read_input(samples_path);
  std::optional<double> accuracy;
  FeatureStats sample_stats;
  if (samples.stats) {
    sample_stats = *samples.stats;
  } else {
    const Tensor labels = samples.labels.defined() ? samples.labels : zeros({samples.images.size(0)}, DType::Int64);
    const ClassifierFeatures f = classifier.of_images(samples.images, labels, "'" + samples_path + "' arr_0");
    sample_stats = f.stats;
    if (samples.labels.defined()) accuracy = f.top1;
  }
  const int64_t n = sample_stats.count;
  if (n < 2)
    throw UsageError(str_cat("'", samples_path, "' states no sample count; the floor and the ceiling are measured "
                             "at the samples' N: pass the images (arr_0) or statistics with a count"));
  clock.update(1);

  FeatureStats ref_stats;
  if (ref == "test" || ref == "train") {
    ref_stats = classifier.of_split(ref, 0).stats;
  } else {
    const NpzInput r = read_input(ref);
    ref_stats = r.stats ? *r.stats
                        : classifier.of_images(r.images, zeros({r.images.size(0)}, DType::Int64), "'" + ref + "' arr_0")
                              .stats;
  }
  if (args.options.count("--save-ref")) save_feature_stats(args.options.at("--save-ref"), ref_stats);
  clock.update(2);

  // The floor: real training images, as many as the samples (the first N; against the training split
  // itself the floor would be a self-comparison, so it reads the other split then).
  const FeatureStats real = classifier.of_split(ref == "train" ? "test" : "train", n).stats;
  clock.update(3);
  Generator noise_gen(0);
  const int64_t side = classifier.model->options().img_size;
  const Tensor noise = clamp(mul(uniform({n, side, side, 1}, 0.0, 1.0, noise_gen), 256.0), 0.0, 255.0).to(DType::UInt8);
  const FeatureStats noise_stats = classifier.of_images(noise, zeros({n}, DType::Int64), "noise").stats;
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
                         {"classifier", classifier.run.checkpoint},
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
