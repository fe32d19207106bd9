// ImageNet-style image folders: root/<split>/<class>/**/*.{jpg,jpeg,png} (extensions in any case; other
// files ignored). Classes are the sorted folder names of root/train (every split must have the same set),
// sample ids the position in the list of files sorted by (class, path), so ids and labels are stable.
// ImageFolderLoader decodes and augments on worker threads into a bounded queue of ready batches. Each
// batch is a pure function of the loader position: training follows EpochSampler's (seed, epoch) order
// and draws augmentation from sample_generator(seed, epoch, id), so batches are bit-identical for any
// thread count and a checkpointed state() resumes exactly.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/image_decode.h"
#include "data/image_source.h"

namespace moh {

struct ImageFolderIndex {
  std::string folder;                // root/split
  std::vector<std::string> classes;  // sorted class folder names; label = position
  std::vector<std::string> files;    // image paths sorted by (label, path); sample id = position
  std::vector<int64_t> labels;       // label of each file
};

// Lists root/split. Errors name the folder: a missing root/split or root/train, no class folders, a split
// whose class folders differ from root/train's (the names are listed), or a split without any image.
// Hidden entries (names starting with '.') are skipped; symlinks are followed.
ImageFolderIndex scan_image_folder(const std::string& root, const std::string& split);

struct ImageFolderOptions {
  std::string root;             // holds train/ (defines the classes), val/, ...
  std::string split = "train";  // the sub-folder to read
  // true: endless shuffled order and augmentation; false: one pass in id order, no randomness.
  bool train = true;
  int64_t batch_size = 64;
  int64_t image_size = 224;  // S: images come out S x S
  int64_t channels = 3;      // 3 (RGB) or 1 (grey)
  int64_t eval_resize = 0;   // evaluation: shorter side before the S crop; 0: int(S / 0.875) (DeiT: 256)
  std::array<double, 2> scale{0.08, 1.0};             // RandomResizedCrop area fraction range
  std::array<double, 2> ratio{3.0 / 4.0, 4.0 / 3.0};  // its aspect-ratio range (drawn log-uniformly)
  double hflip = 0.5;                                 // probability of a horizontal flip (training)
  // Per channel, on [0, 1] pixels; the defaults are ImageNet's (1-channel loaders must set both).
  std::vector<float> mean{0.485f, 0.456f, 0.406f};
  std::vector<float> std_dev{0.229f, 0.224f, 0.225f};
  int64_t threads = 4;   // decode + augment worker threads
  int64_t prefetch = 4;  // batches prepared ahead of the consumer
  uint64_t seed = 0;     // shuffle order and augmentation
  // Decode a JPEG at 1/2, 1/4 or 1/8 size when its crop still has >= 1 source pixel per output pixel.
  bool jpeg_reduction = true;
  // Memory one image's decode may spend (decode_image's budget); an image over it is unreadable (skipped
  // with a warning). Each worker thread decodes one image at a time.
  int64_t decode_budget_mb = kDefaultDecodeBudgetBytes >> 20;
  // Receives one message per unreadable file (called from worker threads, one call at a time); empty:
  // "warning: <message>" on stderr.
  std::function<void(const std::string&)> warn;
};

class ImageFolderLoader {
 public:
  explicit ImageFolderLoader(ImageFolderOptions options);
  ~ImageFolderLoader();  // stops and joins the workers, also mid-epoch
  ImageFolderLoader(const ImageFolderLoader&) = delete;
  ImageFolderLoader& operator=(const ImageFolderLoader&) = delete;

  // Training: the next batch {float32 [B, C, S, S], int64 [B]}, crossing epochs endlessly. Evaluation: the
  // next batch of the pass in id order (the last one may be smaller), nullopt once the pass is over.
  // An unreadable file is reported once through `warn` and replaced by the next readable id (id + 1,
  // wrapping) with the replaced sample's augmentation, so batches stay a function of the position; if
  // no file is readable, next() throws.
  std::optional<ImageBatch> next();
  // Evaluation: abandons the current pass and starts a new one at id 0.
  void restart();

  // The position after the last batch next() returned. Training: EpochSampler's {"epoch", "index",
  // "shuffle_seed"}; evaluation: {"index"}. load_state() drops the prepared batches and continues from
  // `state`: the following batches equal those an uninterrupted loader would have returned.
  std::map<std::string, int64_t> state() const;
  void load_state(const std::map<std::string, int64_t>& state);

  const std::vector<std::string>& classes() const;
  const ImageFolderIndex& index() const;
  int64_t size() const;  // images in the split
  const ImageFolderOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace moh
