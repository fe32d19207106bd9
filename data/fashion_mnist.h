// Fashion-MNIST (Zalando): 60000 train and 10000 test 28x28 grey images in 10 classes, stored as IDX
// files. The Debian package dataset-fashion-mnist puts them in /usr/share/datasets/fashion-mnist;
// the environment variable MOH_FASHION_MNIST names another folder. Loading checks that images are
// uint8 [N, 28, 28], labels uint8 [N] with the same N, and every label is below 10.
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"

namespace moh {

// A labelled image set held in memory, on the CPU.
struct ImageDataset {
  Tensor images;                         // uint8 [N, H, W] (Fashion-MNIST: 28x28)
  Tensor labels;                         // int64 [N], in [0, class_names.size())
  std::vector<std::string> class_names;  // class index -> name
};

// $MOH_FASHION_MNIST when set and non-empty, else /usr/share/datasets/fashion-mnist.
std::string default_fashion_mnist_root();
// The 10 class names in label order ("T-shirt/top", "Trouser", ...).
const std::vector<std::string>& fashion_mnist_class_names();
// Loads split "train" (train-*-idx?-ubyte) or "test" (t10k-*); each file may be raw or end in .gz.
ImageDataset load_fashion_mnist(const std::string& root = default_fashion_mnist_root(),
                                const std::string& split = "train");

}  // namespace moh
