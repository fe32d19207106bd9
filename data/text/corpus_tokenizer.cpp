// Corpus -> token shards with worker threads and in-order writing (see corpus_tokenizer.h).
#include "data/text/corpus_tokenizer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <mutex>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/io/checked_write.h"
#include "data/text/token_shard.h"

namespace moh::text {
namespace {

namespace fs = std::filesystem;

std::string read_document(const std::string& path) {
  if (path == "-") return std::string((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  std::ifstream in(path, std::ios::binary);
  MOH_CHECK(in, "cannot open document '", path, "'");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  MOH_CHECK(!in.bad(), "cannot read document '", path, "'");
  return text;
}

// Buffers one split's tokens and writes a shard each time shard_tokens accumulate.
class ShardSink {
 public:
  ShardSink(std::string dir, std::string split, int64_t shard_tokens, TokenWidth width, std::vector<std::string>& written)
      : dir_(std::move(dir)), split_(std::move(split)), shard_tokens_(shard_tokens), width_(width), written_(written) {}

  void add(const std::vector<TokenId>& tokens) {
    size_t at = 0;
    while (at < tokens.size()) {
      const size_t take = std::min(tokens.size() - at, size_t(shard_tokens_) - buffer_.size());
      buffer_.insert(buffer_.end(), tokens.begin() + std::ptrdiff_t(at), tokens.begin() + std::ptrdiff_t(at + take));
      at += take;
      total_ += int64_t(take);
      if (int64_t(buffer_.size()) == shard_tokens_) flush();
    }
  }
  void flush() {
    if (buffer_.empty()) return;
    char name[32];
    std::snprintf(name, sizeof(name), "_%06d.bin", count_++);
    const std::string path = (fs::path(dir_) / (split_ + name)).string();
    write_token_shard(path, buffer_, width_);
    written_.push_back(path);
    buffer_.clear();
  }
  int64_t total() const { return total_; }

 private:
  std::string dir_, split_;
  int64_t shard_tokens_;
  TokenWidth width_;
  std::vector<std::string>& written_;
  std::vector<TokenId> buffer_;
  int64_t total_ = 0;
  int count_ = 0;
};

// Documents encoded by workers, handed to the writer in order; at most `window` are in flight.
class EncodeQueue {
 public:
  EncodeQueue(const Tokenizer& tokenizer, const std::vector<std::string>& documents, TokenId separator, int threads)
      : tokenizer_(tokenizer), documents_(documents), separator_(separator), results_(documents.size()),
        window_(size_t(4 * threads)) {
    for (int t = 0; t < threads; ++t) workers_.emplace_back([this] { work(); });
  }
  ~EncodeQueue() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    for (auto& w : workers_) w.join();
  }

  // Document k's tokens and byte count (blocks until encoded); rethrows a worker's error.
  std::pair<std::vector<TokenId>, int64_t> take(size_t k) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return results_[k].has_value() || error_; });
    if (error_) std::rethrow_exception(error_);
    auto result = std::move(*results_[k]);
    results_[k].reset();
    taken_ = k + 1;
    changed_.notify_all();
    return result;
  }

 private:
  void work() {
    while (true) {
      size_t k;
      {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return stop_ || error_ || (next_ < documents_.size() && next_ < taken_ + window_); });
        if (stop_ || error_ || next_ >= documents_.size()) return;
        k = next_++;
      }
      try {
        const std::string text = read_document(documents_[k]);
        std::vector<TokenId> tokens{separator_};
        tokens.reserve(text.size() / 3 + 1);
        tokenizer_.encode_ordinary_into(text, tokens);
        std::lock_guard lock(mutex_);
        results_[k] = std::make_pair(std::move(tokens), int64_t(text.size()));
      } catch (...) {
        std::lock_guard lock(mutex_);
        if (!error_) error_ = std::current_exception();
      }
      changed_.notify_all();
    }
  }

  const Tokenizer& tokenizer_;
  const std::vector<std::string>& documents_;
  TokenId separator_;
  std::vector<std::optional<std::pair<std::vector<TokenId>, int64_t>>> results_;
  size_t window_, next_ = 0, taken_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::thread> workers_;
};

void check_out_dir(const std::string& dir) {
  if (!fs::exists(dir)) {
    fs::create_directories(dir);
    return;
  }
  MOH_CHECK(fs::is_directory(dir), "--out '", dir, "' is not a folder");
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    MOH_CHECK(!(name.size() > 4 && name.compare(name.size() - 4, 4, ".bin") == 0) && name != "meta.json",
              "--out '", dir, "' already holds token shards ('", name, "'); remove them or choose another folder");
  }
}

}  // namespace

std::vector<std::string> expand_document_paths(const std::vector<std::string>& args) {
  std::vector<std::string> paths;
  for (const std::string& arg : args) {
    if (arg == "-") {
      paths.push_back(arg);
      continue;
    }
    MOH_CHECK(fs::exists(arg), "input '", arg, "' does not exist");
    if (!fs::is_directory(arg)) {
      paths.push_back(arg);
      continue;
    }
    std::vector<std::string> files;
    for (auto it = fs::recursive_directory_iterator(arg); it != fs::recursive_directory_iterator(); ++it) {
      if (it->path().filename().string().rfind('.', 0) == 0) {
        if (it->is_directory()) it.disable_recursion_pending();
        continue;
      }
      if (it->is_regular_file()) files.push_back(it->path().string());
    }
    MOH_CHECK(!files.empty(), "input folder '", arg, "' holds no files");
    std::sort(files.begin(), files.end());
    paths.insert(paths.end(), files.begin(), files.end());
  }
  return paths;
}

TokenizeResult tokenize_corpus(const Tokenizer& tokenizer, const std::vector<std::string>& documents,
                               const TokenizeOptions& options,
                               const std::function<void(const TokenizeProgress&)>& progress) {
  MOH_CHECK(!documents.empty(), "no documents to tokenize");
  MOH_CHECK(std::count(documents.begin(), documents.end(), "-") <= 1, "stdin ('-') can be read only once");
  MOH_CHECK(options.val_fraction >= 0 && options.val_fraction < 1, "--val-fraction must be in [0, 1), got ",
            options.val_fraction);
  MOH_CHECK(options.threads >= 1, "--threads must be at least 1, got ", options.threads);
  MOH_CHECK(options.shard_tokens >= 1 && options.shard_tokens <= INT32_MAX, "--shard-tokens must be in [1, 2^31), got ",
            options.shard_tokens);
  const std::optional<TokenId> separator = tokenizer.end_of_text();
  MOH_CHECK(separator.has_value(), tokenizer.description(), " has no end-of-text token to separate documents");
  const size_t n = documents.size();
  size_t val_docs = 0;
  if (options.val_fraction > 0) {
    MOH_CHECK(n >= 2, "--val-fraction needs at least 2 documents (validation takes whole documents), got ", n);
    val_docs = std::clamp<size_t>(size_t(std::llround(options.val_fraction * double(n))), 1, n - 1);
  }
  check_out_dir(options.out_dir);

  const auto start = std::chrono::steady_clock::now();
  const TokenWidth width = token_width_for(tokenizer.vocab_size());
  TokenizeResult result;
  try {
    ShardSink train(options.out_dir, "train", options.shard_tokens, width, result.shards);
    ShardSink val(options.out_dir, "val", options.shard_tokens, width, result.shards);
    EncodeQueue queue(tokenizer, documents, *separator, options.threads);
    TokenizeProgress p;
    p.documents = int64_t(n);
    for (size_t k = 0; k < n; ++k) {
      auto [tokens, bytes] = queue.take(k);
      (k < n - val_docs ? train : val).add(tokens);
      p.documents_done = int64_t(k + 1);
      p.bytes += bytes;
      p.tokens += int64_t(tokens.size());
      p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (progress) progress(p);
    }
    train.flush();
    val.flush();
    result.documents = int64_t(n);
    result.bytes = p.bytes;
    result.train_tokens = train.total();
    result.val_tokens = val.total();
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    nlohmann::json meta{{"tokenizer", tokenizer.description()},
                        {"vocab_size", tokenizer.vocab_size()},
                        {"end_of_text", *separator},
                        {"token_bytes", int(width)},
                        {"documents", n},
                        {"val_documents", val_docs},
                        {"bytes", result.bytes},
                        {"train_tokens", result.train_tokens},
                        {"val_tokens", result.val_tokens}};
    write_file_atomically((fs::path(options.out_dir) / "meta.json").string(), meta.dump(2) + "\n");
  } catch (...) {
    for (const std::string& shard : result.shards) fs::remove(shard);
    throw;
  }
  return result;
}

}  // namespace moh::text
