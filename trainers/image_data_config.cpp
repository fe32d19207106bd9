// The data.* keys of the image families and the ImageSource they build (see image_data_config.h).
#include "trainers/image_data_config.h"

#include "data/fashion_mnist.h"
#include "data/folder_image_source.h"
#include "data/image_decode.h"  // kDefaultDecodeBudgetBytes
#include "data/memory_image_source.h"

namespace moh {

void add_image_data_keys(config::Schema& s, const ImageDataDefaults& defaults) {
  using config::Key;
  s.add(Key::Enum("data.name", {"fashion_mnist", "image_folder"},
                  "dataset: Fashion-MNIST IDX files, or an ImageNet-style folder root/{train,val}/<class>/*")
            .def("fashion_mnist"));
  s.add(Key::String("data.root", "dataset folder (\"\" = the default Fashion-MNIST location)").def(""));
  s.add(Key::Int("data.image_size", "image_folder: side of the square training/eval crops").def(224).min(8));
  s.add(Key::String("data.eval_split",
                    "the held-out split: image_folder: the sub-folder evaluated (classes must match train/); "
                    "fashion_mnist: val or test (the test images) or train (the training images)")
            .def("val")
            .match("[A-Za-z0-9_.-]+", "a folder name"));
  s.add(Key::FloatList("data.crop_scale", "image_folder: RandomResizedCrop area range [min, max]")
            .def(std::vector<double>{0.08, 1.0})
            .range(0, 1));
  s.add(Key::Float("data.eval_crop", "image_folder: eval centre crop / resized shorter side (DeiT: 0.875)")
            .def(0.875)
            .range(0.1, 1));
  s.add(Key::Int("data.workers", "image_folder: decoding and augmentation threads").def(4).min(1));
  s.add(Key::Int("data.prefetch", "image_folder: batches prepared ahead of training").def(4).min(1));
  s.add(Key::Int("data.decode_budget_mb",
                 "image_folder: memory one image's decoding may spend (per worker); a larger image is skipped "
                 "with a warning")
            .def(kDefaultDecodeBudgetBytes >> 20)
            .range(1, 1 << 30));
  s.add(Key::Int("data.crop_padding", "fashion_mnist: random translation of up to N pixels (0 = off)")
            .def(defaults.crop_padding)
            .min(0));
  s.add(Key::Float("data.hflip", "probability of a horizontal flip of a training image").def(defaults.hflip).range(0, 1));
  s.add(Key::Int("data.train_limit", "fashion_mnist: train on the first N training samples only (0 = all)").def(0).min(0));
  s.add(Key::Int("data.eval_limit", "evaluate on the first N held-out samples (0 = all)").def(0).min(0));
}

std::unique_ptr<ImageSource> make_image_source(const Config& cfg, PixelRange range, uint64_t seed,
                                               const WarningChannel& warnings) {
  const std::string& name = cfg.get_string("data.name");
  const std::string& eval_split = cfg.get_string("data.eval_split");
  if (name == "fashion_mnist") {
    if (eval_split != "val" && eval_split != "test" && eval_split != "train")
      throw ConfigError(str_cat(cfg.origin("data.eval_split"), ": fashion_mnist has the splits train and test (val "
                                "means test), got '", eval_split, "'"));
    const std::string root = cfg.get_string("data.root").empty() ? default_fashion_mnist_root()
                                                                  : cfg.get_string("data.root");
    InMemoryAugment augment;
    augment.pad = cfg.get_int("data.crop_padding");
    augment.hflip = cfg.get_float("data.hflip");
    if (range == PixelRange::SignedUnit) augment.mean = augment.std = 0.5;
    return std::make_unique<InMemoryImageSource>(load_fashion_mnist(root, "train"),
                                                 load_fashion_mnist(root, eval_split == "train" ? "train" : "test"),
                                                 augment, seed, cfg.get_int("data.train_limit"),
                                                 cfg.get_int("data.eval_limit"));
  }
  if (cfg.get_string("data.root").empty())
    throw ConfigError(str_cat(cfg.origin("data.root"), ": data.name image_folder needs data.root (a folder holding "
                              "train/<class>/* and ", eval_split, "/<class>/*)"));
  const auto& scale = cfg.get_float_list("data.crop_scale");
  if (scale.size() != 2 || scale[0] > scale[1])
    throw ConfigError(str_cat(cfg.origin("data.crop_scale"), ": data.crop_scale must be [min, max] with min <= max"));
  ImageFolderOptions o;
  o.root = cfg.get_string("data.root");
  o.image_size = cfg.get_int("data.image_size");
  o.eval_resize = int64_t(double(o.image_size) / cfg.get_float("data.eval_crop"));
  o.scale = {scale[0], scale[1]};
  o.hflip = cfg.get_float("data.hflip");
  o.threads = cfg.get_int("data.workers");
  o.prefetch = cfg.get_int("data.prefetch");
  o.decode_budget_mb = cfg.get_int("data.decode_budget_mb");
  o.seed = seed;
  if (range == PixelRange::SignedUnit) o.mean = o.std_dev = std::vector<float>(3, 0.5f);
  o.warn = [&warnings](const std::string& message) { warnings.warn(message); };
  return std::make_unique<FolderImageSource>(o, eval_split, cfg.get_int("data.eval_limit"));
}

std::unique_ptr<ImageSource> make_image_source_over(const Config& cfg, PixelRange range, ImageDataset images) {
  if (cfg.get_string("data.name") != "fashion_mnist")
    throw ConfigError(str_cat(cfg.origin("data.name"), ": data.name ", cfg.get_string("data.name"),
                              ": only in-memory grey datasets (fashion_mnist) can evaluate generated images"));
  InMemoryAugment plain;
  plain.pad = 0;
  plain.hflip = 0;
  if (range == PixelRange::SignedUnit) plain.mean = plain.std = 0.5;
  ImageDataset copy = images;
  return std::make_unique<InMemoryImageSource>(std::move(copy), std::move(images), plain, 0);
}

}  // namespace moh
