// fast-DiT latent folders (see fast_dit_latents.h).
#include "data/fast_dit_latents.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>

#include "core/io/npy.h"

namespace moh {
namespace {

namespace fs = std::filesystem;

// The stems of the *.npy files in `dir`.
std::vector<std::string> npy_stems(const std::string& dir, const char* what) {
  std::error_code ec;
  MOH_CHECK(fs::is_directory(dir, ec), "fast-DiT ", what, " folder '", dir, "' does not exist or is not a folder");
  std::vector<std::string> stems;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const fs::path& p = entry.path();
    if (p.extension() == ".npy" && !entry.is_directory()) stems.push_back(p.stem().string());
  }
  MOH_CHECK(!ec, "fast-DiT ", what, " folder '", dir, "': cannot list: ", ec.message());
  return stems;
}

bool is_decimal(const std::string& s) {
  return !s.empty() && s.size() <= 18 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Numeric order when every name is a decimal integer, else byte order.
void sort_names(std::vector<std::string>& names) {
  if (std::all_of(names.begin(), names.end(), is_decimal)) {
    std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
      const long long x = std::stoll(a), y = std::stoll(b);
      return x != y ? x < y : a < b;
    });
  } else {
    std::sort(names.begin(), names.end());
  }
}

bool latent_shape_ok(const Shape& s) { return s.size() == 3 || (s.size() == 4 && s[0] == 1); }

class FastDitLatents : public LatentSource {
 public:
  FastDitLatents(const std::string& features_dir, const std::string& labels_dir, const LatentSourceOptions& options)
      : features_dir_(features_dir), labels_dir_(labels_dir), path_(features_dir) {
    names_ = npy_stems(features_dir, "features");
    std::vector<std::string> label_names = npy_stems(labels_dir, "labels");
    check_pairing(label_names);
    MOH_CHECK(!names_.empty(), "fast-DiT features folder '", features_dir, "' holds no .npy files");
    sort_names(names_);

    first_header_ = read_npy_header(feature_file(0));
    check_feature_header(first_header_, 0);
    const Shape& s = first_header_.shape;
    latent_shape_ = Shape(s.end() - 3, s.end());
    if (options.check_all_features)
      for (size_t i = 1; i < names_.size(); ++i) check_feature_header(read_npy_header(feature_file(i)), i);

    labels_ = Tensor::empty({int64_t(names_.size())}, DType::Int64);
    int64_t max_label = -1;
    for (size_t i = 0; i < names_.size(); ++i) {
      const int64_t label = read_label(i);
      labels_.data<int64_t>()[i] = label;
      max_label = std::max(max_label, label);
    }
    num_classes_ = options.num_classes.value_or(max_label + 1);
    MOH_CHECK(num_classes_ >= 1 && max_label < num_classes_, "fast-DiT labels folder '", labels_dir_, "': label ",
              max_label, " is outside [0, ", num_classes_, ") (the num_classes given)");
    scale_factor_ = options.scale_factor.value_or(1.0);
    MOH_CHECK(std::isfinite(scale_factor_) && scale_factor_ > 0, "fast-DiT folder '", features_dir_,
              "': scale_factor must be a finite number > 0, got ", scale_factor_);
  }

  int64_t size() const override { return int64_t(names_.size()); }
  const Shape& latent_shape() const override { return latent_shape_; }
  int64_t num_classes() const override { return num_classes_; }
  double scale_factor() const override { return scale_factor_; }
  const std::string& posterior() const override { return posterior_; }
  const std::string& path() const override { return path_; }

  LatentBatch read(const std::vector<int64_t>& indices) const override {
    check_latent_indices(indices, size(), "fast-DiT folder '" + features_dir_ + "'");
    Shape batch_shape = latent_shape_;
    batch_shape.insert(batch_shape.begin(), int64_t(indices.size()));
    LatentBatch batch{Tensor::empty(batch_shape, DType::Float32),
                      Tensor::empty({int64_t(indices.size())}, DType::Int64)};
    const int64_t row = shape_numel(latent_shape_);
    for (size_t k = 0; k < indices.size(); ++k) {
      const size_t i = size_t(indices[k]);
      const Tensor t = load_npy(feature_file(i));
      MOH_CHECK(t.dtype() == first_header_.dtype && t.shape() == first_header_.shape, "fast-DiT feature file '",
                feature_file(i), "': ", describe(t), " differs from the first file's ", dtype_name(first_header_.dtype),
                " ", shape_str(first_header_.shape));
      std::memcpy(batch.latents.data<float>() + int64_t(k) * row, t.raw_data(), t.nbytes());
      batch.labels.data<int64_t>()[k] = labels_.data<int64_t>()[i];
    }
    return batch;
  }

 private:
  std::string feature_file(size_t i) const { return (fs::path(features_dir_) / (names_[i] + ".npy")).string(); }
  std::string label_file(size_t i) const { return (fs::path(labels_dir_) / (names_[i] + ".npy")).string(); }

  void check_pairing(const std::vector<std::string>& label_names) const {
    const std::set<std::string> features(names_.begin(), names_.end()), labels(label_names.begin(), label_names.end());
    for (const std::string& n : features)
      MOH_CHECK(labels.count(n), "fast-DiT feature file '", (fs::path(features_dir_) / (n + ".npy")).string(),
                "' has no label file '", (fs::path(labels_dir_) / (n + ".npy")).string(), "'");
    for (const std::string& n : labels)
      MOH_CHECK(features.count(n), "fast-DiT label file '", (fs::path(labels_dir_) / (n + ".npy")).string(),
                "' has no feature file '", (fs::path(features_dir_) / (n + ".npy")).string(), "'");
  }

  void check_feature_header(const NpyHeader& h, size_t i) const {
    const std::string file = feature_file(i);
    MOH_CHECK(h.dtype == DType::Float32 && latent_shape_ok(h.shape), "fast-DiT feature file '", file,
              "': expected float32 (1, C, H, W) or (C, H, W), got ", dtype_name(h.dtype), " ", shape_str(h.shape));
    MOH_CHECK(i == 0 || h.shape == first_header_.shape, "fast-DiT feature file '", file, "': shape ",
              shape_str(h.shape), " differs from ", shape_str(first_header_.shape), " of '", feature_file(0), "'");
  }

  int64_t read_label(size_t i) const {
    const std::string file = label_file(i);
    const Tensor t = load_npy(file);
    MOH_CHECK((t.dtype() == DType::Int64 || t.dtype() == DType::Int32) && t.numel() == 1 && t.dim() <= 1,
              "fast-DiT label file '", file, "': expected one int64 or int32 label of shape (1,) or (), got ",
              describe(t));
    const int64_t label = t.dtype() == DType::Int64 ? t.data<int64_t>()[0] : t.data<int32_t>()[0];
    MOH_CHECK(label >= 0, "fast-DiT label file '", file, "': label ", label, " is negative");
    return label;
  }

  std::string features_dir_, labels_dir_, path_;
  std::vector<std::string> names_;
  NpyHeader first_header_;
  Shape latent_shape_;
  Tensor labels_;
  int64_t num_classes_ = 0;
  double scale_factor_ = 1;
  std::string posterior_ = "sample";
};

}  // namespace

std::unique_ptr<LatentSource> open_fast_dit_latents(const std::string& features_dir, const std::string& labels_dir,
                                                    const LatentSourceOptions& options) {
  return std::make_unique<FastDitLatents>(features_dir, labels_dir, options);
}

}  // namespace moh
