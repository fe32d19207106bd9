// FolderImageSource: the ImageSource over an ImageNet-style folder (data/image_folder.h): root/train
// for training (RandomResizedCrop + flip on worker threads) and root/<eval split> for evaluation
// (resize + centre crop). The training loader is created for the batch size the task asks for and
// re-created at the same position if that size changes, so state() is always the sampler position.
#pragma once

#include <memory>

#include "data/image_folder.h"
#include "data/image_source.h"

namespace moh {

class FolderImageSource final : public ImageSource {
 public:
  // `train` configures the training loader (its split, batch size and `train` flag are set here);
  // evaluation reads `eval_split` with the same size, channels, normalisation and threads.
  FolderImageSource(ImageFolderOptions train, std::string eval_split, int64_t eval_limit = 0);

  ImageBatch next_train(int64_t batch_size) override;
  void for_each_eval_batch(int64_t begin, int64_t end, int64_t batch_size,
                           const std::function<void(const ImageBatch&)>& fn) override;
  int64_t train_size() const override { return train_size_; }
  int64_t eval_size() const override { return eval_size_; }
  const std::vector<std::string>& class_names() const override { return classes_; }
  int64_t channels() const override { return options_.channels; }
  int64_t image_size() const override { return options_.image_size; }
  std::map<std::string, int64_t> state() const override;
  void load_state(const std::map<std::string, int64_t>& state) override;

 private:
  ImageFolderOptions options_;
  std::string eval_split_;
  int64_t eval_limit_;
  std::vector<std::string> classes_;
  int64_t train_size_ = 0, eval_size_ = 0;
  std::unique_ptr<ImageFolderLoader> train_;
  std::map<std::string, int64_t> pending_state_;  // position to apply when the loader is (re)created
};

}  // namespace moh
