// ImageSource over image folders (see folder_image_source.h).
#include "data/folder_image_source.h"

#include <algorithm>

#include "core/factory.h"

namespace moh {

FolderImageSource::FolderImageSource(ImageFolderOptions train, std::string eval_split, int64_t eval_limit)
    : options_(std::move(train)), eval_split_(std::move(eval_split)), eval_limit_(eval_limit) {
  options_.split = "train";
  options_.train = true;
  const ImageFolderIndex train_index = scan_image_folder(options_.root, "train");
  const ImageFolderIndex eval_index = scan_image_folder(options_.root, eval_split_);
  classes_ = train_index.classes;
  train_size_ = int64_t(train_index.files.size());
  eval_size_ = eval_limit_ > 0 ? std::min<int64_t>(eval_limit_, int64_t(eval_index.files.size()))
                               : int64_t(eval_index.files.size());
}

ImageBatch FolderImageSource::next_train(int64_t batch_size) {
  if (!train_ || train_->options().batch_size != batch_size) {
    if (train_) pending_state_ = train_->state();
    ImageFolderOptions o = options_;
    o.batch_size = batch_size;
    train_ = std::make_unique<ImageFolderLoader>(o);
    if (!pending_state_.empty()) train_->load_state(pending_state_);
    pending_state_.clear();
  }
  std::optional<ImageBatch> batch = train_->next();
  MOH_CHECK(batch.has_value(), "image folder '", options_.root, "/train': the training loader ended");
  return *batch;
}

void FolderImageSource::for_each_eval_batch(int64_t begin, int64_t end, int64_t batch_size,
                                            const std::function<void(const ImageBatch&)>& fn) {
  MOH_CHECK(0 <= begin && begin <= end && end <= eval_size_, "image folder '", options_.root, "/", eval_split_,
            "': eval samples [", begin, ", ", end, ") are not within the ", eval_size_, " evaluated");
  if (begin == end) return;
  ImageFolderOptions o = options_;
  o.split = eval_split_;
  o.train = false;
  o.batch_size = batch_size;
  ImageFolderLoader loader(o);
  if (begin > 0) loader.load_state({{"index", begin}});
  for (int64_t done = begin; done < end;) {
    std::optional<ImageBatch> batch = loader.next();
    if (!batch) break;
    const int64_t n = std::min<int64_t>(batch->labels.shape()[0], end - done);
    if (n < batch->labels.shape()[0]) batch = ImageBatch{batch->images.narrow(0, 0, n), batch->labels.narrow(0, 0, n)};
    fn(*batch);
    done += n;
  }
}

std::map<std::string, int64_t> FolderImageSource::state() const {
  if (train_) return train_->state();
  if (!pending_state_.empty()) return pending_state_;
  return {{"epoch", 0}, {"index", 0}, {"shuffle_seed", int64_t(options_.seed)}};
}

void FolderImageSource::load_state(const std::map<std::string, int64_t>& state) {
  if (train_)
    train_->load_state(state);
  else
    pending_state_ = state;
}

}  // namespace moh
