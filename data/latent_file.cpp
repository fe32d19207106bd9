// The HDF5 latent file: its reader (a LatentSource) and its streaming writer (see latent_file.h).
#include "data/latent_file.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/io/checked_write.h"

namespace moh {
namespace {

void check_scale_factor(double s, const std::string& where) {
  MOH_CHECK(std::isfinite(s) && s > 0, where, ": scale_factor must be a finite number > 0, got ", s);
}

void check_posterior(const std::string& p, const std::string& where) {
  MOH_CHECK(p == "mean" || p == "sample", where, ": posterior must be \"mean\" or \"sample\", got \"", p, "\"");
}

// Every label in [0, num_classes).
void check_labels(const Tensor& labels, int64_t num_classes, const std::string& where, int64_t first_index = 0) {
  const int64_t* l = labels.data<int64_t>();
  const int64_t* bad = std::find_if(l, l + labels.numel(), [&](int64_t v) { return v < 0 || v >= num_classes; });
  MOH_CHECK(bad == l + labels.numel(), where, ": label of sample ", first_index + (bad - l), " is ",
            bad == l + labels.numel() ? 0 : *bad, ", outside [0, ", num_classes, ")");
}

class LatentFileSource : public LatentSource {
 public:
  LatentFileSource(const std::string& path, std::optional<double> scale_override)
      : path_(path), where_("latent file '" + path + "'"), file_(path, Hdf5File::Mode::Read) {
    for (const char* attr : {"format", "version", "scale_factor", "posterior", "num_classes"})
      MOH_CHECK(file_.has_attr("/", attr), where_, ": missing root attribute '", attr,
                "' (is this a latent file written by moh encode?)");
    const std::string format = file_.attr_string("/", "format");
    MOH_CHECK(format == kLatentFileFormat, where_, ": attribute format is \"", format, "\", expected \"",
              kLatentFileFormat, "\"");
    const int64_t version = file_.attr_int("/", "version");
    MOH_CHECK(version == kLatentFileVersion, where_, ": version ", version, " is not supported (this build reads ",
              kLatentFileVersion, ")");
    scale_factor_ = scale_override.value_or(file_.attr_double("/", "scale_factor"));
    check_scale_factor(scale_factor_, where_);
    posterior_ = file_.attr_string("/", "posterior");
    check_posterior(posterior_, where_);
    num_classes_ = file_.attr_int("/", "num_classes");
    MOH_CHECK(num_classes_ >= 1, where_, ": num_classes must be >= 1, got ", num_classes_);
    for (const char* d : {"latents", "labels"})
      MOH_CHECK(file_.exists(d) && !file_.is_group(d), where_, ": missing dataset '/", d, "'");
    const Shape shape = file_.dataset_shape("latents");
    MOH_CHECK(file_.dataset_dtype("latents") == DType::Float32 && shape.size() == 4, where_,
              ": /latents must be float32 [N, C, H, W], got ", dtype_name(file_.dataset_dtype("latents")), " ",
              shape_str(shape));
    size_ = shape[0];
    latent_shape_ = Shape(shape.begin() + 1, shape.end());
    labels_ = file_.read_tensor("labels");
    MOH_CHECK(labels_.dtype() == DType::Int64 && labels_.shape() == Shape{size_}, where_, ": /labels must be int64 [",
              size_, "] (one per latent), got ", describe(labels_));
    check_labels(labels_, num_classes_, where_);
  }

  int64_t size() const override { return size_; }
  const Shape& latent_shape() const override { return latent_shape_; }
  int64_t num_classes() const override { return num_classes_; }
  double scale_factor() const override { return scale_factor_; }
  const std::string& posterior() const override { return posterior_; }
  const std::string& path() const override { return path_; }

  LatentBatch read(const std::vector<int64_t>& indices) const override {
    check_latent_indices(indices, size_, where_);
    Shape batch_shape = latent_shape_;
    batch_shape.insert(batch_shape.begin(), int64_t(indices.size()));
    LatentBatch batch{Tensor::empty(batch_shape, DType::Float32),
                      Tensor::empty({int64_t(indices.size())}, DType::Int64)};
    const int64_t row = shape_numel(latent_shape_);
    float* out = batch.latents.data<float>();
    int64_t* labels = batch.labels.data<int64_t>();
    // One HDF5 read per run of consecutive indices.
    for (size_t i = 0; i < indices.size();) {
      size_t j = i + 1;
      while (j < indices.size() && indices[j] == indices[j - 1] + 1) ++j;
      const Tensor rows = file_.read_rows("latents", indices[i], int64_t(j - i));
      std::copy_n(rows.data<float>(), rows.numel(), out + int64_t(i) * row);
      for (size_t k = i; k < j; ++k) labels[k] = labels_.data<int64_t>()[indices[k]];
      i = j;
    }
    return batch;
  }

 private:
  std::string path_, where_;
  Hdf5File file_;
  int64_t size_ = 0, num_classes_ = 0;
  Shape latent_shape_;
  double scale_factor_ = 1;
  std::string posterior_;
  Tensor labels_;
};

}  // namespace

std::unique_ptr<LatentSource> open_latent_file(const std::string& path, std::optional<double> scale_factor) {
  return std::make_unique<LatentFileSource>(path, scale_factor);
}

LatentFileWriter::LatentFileWriter(const std::string& path, const LatentFileInfo& info)
    : path_(path), tmp_(path + ".tmp"), info_(info) {
  const std::string where = "LatentFileWriter '" + path + "'";
  MOH_CHECK(info.count >= 0, where, ": count must be >= 0, got ", info.count);
  MOH_CHECK(info.latent_shape.size() == 3 &&
                std::all_of(info.latent_shape.begin(), info.latent_shape.end(), [](int64_t d) { return d > 0; }),
            where, ": latent_shape must be [C, H, W] with positive sizes, got ", shape_str(info.latent_shape));
  MOH_CHECK(info.num_classes >= 1, where, ": num_classes must be >= 1, got ", info.num_classes);
  check_posterior(info.posterior, where);
  if (info.scale_factor) check_scale_factor(*info.scale_factor, where);
  file_ = std::make_unique<Hdf5File>(tmp_, Hdf5File::Mode::Create);
  Shape shape = info.latent_shape;
  shape.insert(shape.begin(), info.count);
  file_->create_dataset("latents", DType::Float32, shape);
  file_->create_dataset("labels", DType::Int64, {info.count});
}

LatentFileWriter::~LatentFileWriter() {
  if (!file_) return;
  file_.reset();
  std::error_code ignored;
  std::filesystem::remove(tmp_, ignored);
}

void LatentFileWriter::write(const Tensor& latents, const Tensor& labels) {
  const std::string where = "LatentFileWriter '" + path_ + "'";
  MOH_CHECK(file_, where, ": already finished");
  Shape expected = info_.latent_shape;
  expected.insert(expected.begin(), latents.defined() && latents.dim() == 4 ? latents.size(0) : -1);
  MOH_CHECK(latents.defined() && latents.dtype() == DType::Float32 && latents.shape() == expected, where,
            ": latents must be float32 [B, ", info_.latent_shape[0], ", ", info_.latent_shape[1], ", ",
            info_.latent_shape[2], "], got ", latents.defined() ? describe(latents) : "an undefined tensor");
  const int64_t b = latents.size(0);
  MOH_CHECK(labels.defined() && labels.dtype() == DType::Int64 && labels.shape() == Shape{b}, where,
            ": labels must be int64 [", b, "] (one per latent), got ",
            labels.defined() ? describe(labels) : "an undefined tensor");
  MOH_CHECK(b <= info_.count - written_, where, ": ", written_, " of ", info_.count, " samples written, ", b,
            " more do not fit");
  const Tensor cpu_labels = labels.to(Device::cpu()).contiguous();
  check_labels(cpu_labels, info_.num_classes, where, written_);
  file_->write_rows("latents", written_, latents);
  file_->write_rows("labels", written_, cpu_labels);
  written_ += b;
}

void LatentFileWriter::finish(std::optional<double> scale_factor) {
  const std::string where = "LatentFileWriter '" + path_ + "'";
  MOH_CHECK(file_, where, ": already finished");
  MOH_CHECK(written_ == info_.count, where, ": only ", written_, " of ", info_.count, " samples were written");
  const std::optional<double> scale = scale_factor ? scale_factor : info_.scale_factor;
  MOH_CHECK(scale, where, ": no scale factor was given (LatentFileInfo::scale_factor or finish())");
  check_scale_factor(*scale, where);
  file_->set_attr_string("/", "format", kLatentFileFormat);
  file_->set_attr_int("/", "version", kLatentFileVersion);
  file_->set_attr_double("/", "scale_factor", *scale);
  file_->set_attr_string("/", "posterior", info_.posterior);
  file_->set_attr_int("/", "num_classes", info_.num_classes);
  file_->close();
  fsync_file(tmp_);
  std::error_code ec;
  std::filesystem::rename(tmp_, path_, ec);
  MOH_CHECK(!ec, where, ": cannot rename '", tmp_, "' to it: ", ec.message());
  file_.reset();
  fsync_directory(
      std::filesystem::path(path_).parent_path().empty() ? "." : std::filesystem::path(path_).parent_path().string());
}

}  // namespace moh
