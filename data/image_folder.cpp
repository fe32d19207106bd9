// Folder scan and the threaded loader. The consumer thread owns the schedule: it keeps up to `prefetch`
// jobs (one per batch, with its ids, epochs and the position after it) in a queue; workers claim single
// samples of the oldest unfinished jobs under the lock, then read, decode and augment outside it straight
// into the job's tensors. The consumer takes the front job once all its samples are done. Discarding
// (load_state, restart) cancels the queue and waits for the claimed samples before dropping the jobs.
#include "data/image_folder.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <condition_variable>
#include <deque>
#include <exception>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <thread>

#include "data/epoch_sampler.h"
#include "data/image_decode.h"
#include "data/image_transforms.h"

namespace moh {
namespace {

namespace fs = std::filesystem;

// sample_generator() gives each sample 2^16 Philox words inside an epoch window of 2^40.
constexpr int64_t kMaxImages = int64_t(1) << 24;

bool is_image_name(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

bool hidden(const fs::path& p) { return p.filename().string().starts_with("."); }

std::vector<std::string> class_folders(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir))
    if (!hidden(e.path()) && e.is_directory()) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  MOH_CHECK(!names.empty(), "image_folder: no class folders in '", dir.string(),
            "' (expected <class>/<images>)");
  return names;
}

// Up to 5 names of `a` missing from `b`, comma separated.
std::string missing_names(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::string s;
  int64_t count = 0;
  for (const auto& n : a) {
    if (std::binary_search(b.begin(), b.end(), n)) continue;
    if (count++ < 5) s += (s.empty() ? "" : ", ") + n;
  }
  if (count > 5) s += ", ... (" + std::to_string(count) + " in all)";
  return s.empty() ? "none" : s;
}

void print_warning(const std::string& message) { std::cerr << "warning: " << message << std::endl; }

// Image files under `dir` (recursively, following symlinks, skipping hidden entries), sorted.
std::vector<std::string> image_files(const fs::path& dir) {
  std::vector<std::string> files;
  const auto options = fs::directory_options::follow_directory_symlink;
  for (auto it = fs::recursive_directory_iterator(dir, options); it != fs::recursive_directory_iterator(); ++it) {
    if (hidden(it->path())) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && is_image_name(it->path())) files.push_back(it->path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

ImageFolderIndex scan(const fs::path& root, const std::string& split) {
  const fs::path folder = root / split, train = root / "train";
  MOH_CHECK(fs::is_directory(folder), "image_folder: no folder '", folder.string(),
            "' (expected <root>/<split>/<class>/<images>)");
  MOH_CHECK(fs::is_directory(train), "image_folder: no folder '", train.string(),
            "': the class list comes from <root>/train");
  ImageFolderIndex index;
  index.folder = folder.string();
  index.classes = class_folders(train);
  if (split != "train") {
    const std::vector<std::string> own = class_folders(folder);
    MOH_CHECK(own == index.classes, "image_folder: the class folders of '", index.folder,
              "' differ from those of '", train.string(), "': missing ", missing_names(index.classes, own),
              "; extra ", missing_names(own, index.classes));
  }
  for (size_t label = 0; label < index.classes.size(); ++label) {
    const std::vector<std::string> files = image_files(folder / index.classes[label]);
    index.files.insert(index.files.end(), files.begin(), files.end());
    index.labels.insert(index.labels.end(), files.size(), int64_t(label));
  }
  MOH_CHECK(!index.files.empty(), "image_folder: no images (.jpg, .jpeg, .png) in the class folders of '",
            index.folder, "'");
  MOH_CHECK(int64_t(index.files.size()) <= kMaxImages, "image_folder: '", index.folder, "' holds ",
            index.files.size(), " images, more than the ", kMaxImages, " a loader can address");
  return index;
}

}  // namespace

ImageFolderIndex scan_image_folder(const std::string& root, const std::string& split) {
  try {
    return scan(root, split);
  } catch (const fs::filesystem_error& e) {
    MOH_FAIL("image_folder: cannot list '", (fs::path(root) / split).string(), "': ", e.what());
  }
}

struct ImageFolderLoader::Impl {
  // One batch in preparation.
  struct Job {
    std::vector<int64_t> ids, epochs;
    std::map<std::string, int64_t> state_after;  // the loader position once this batch is consumed
    Tensor images, labels;
    int64_t claimed = 0, done = 0;
    bool cancelled = false;
    std::exception_ptr error;
    int64_t size() const { return int64_t(ids.size()); }
  };

  ImageFolderOptions opt;
  ImageFolderIndex index;
  int64_t resize = 0;
  EpochSampler sampler;   // training: the scheduling position (ahead of the consumer)
  int64_t eval_next = 0;  // evaluation: the next id to schedule
  std::map<std::string, int64_t> consumed;
  std::unique_ptr<std::atomic<bool>[]> bad;  // files known to be unreadable

  std::mutex mu, warn_mu;
  std::condition_variable work_cv, done_cv;
  std::deque<std::unique_ptr<Job>> jobs;
  bool stop = false;
  std::vector<std::thread> threads;

  Impl(ImageFolderOptions o, ImageFolderIndex i)
      : opt(std::move(o)),
        index(std::move(i)),
        sampler(int64_t(index.files.size()), opt.seed, index.folder),
        bad(new std::atomic<bool>[index.files.size()]) {
    for (size_t k = 0; k < index.files.size(); ++k) bad[k] = false;
    resize = opt.eval_resize ? opt.eval_resize : int64_t(double(opt.image_size) / 0.875);
    consumed = opt.train ? sampler.state() : std::map<std::string, int64_t>{{"index", 0}};
    if (!opt.warn) opt.warn = print_warning;
  }

  int64_t n() const { return int64_t(index.files.size()); }

  // Stops the workers; each finishes the sample it holds.
  void join() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    work_cv.notify_all();
    for (auto& t : threads) t.join();
    threads.clear();
  }

  // Tops the queue up to `prefetch` jobs (lock held); evaluation stops at the end of the pass.
  void schedule() {
    while (int64_t(jobs.size()) < opt.prefetch) {
      auto job = std::make_unique<Job>();
      if (opt.train) {
        job->ids = sampler.next(opt.batch_size, &job->epochs);
        job->state_after = sampler.state();
      } else {
        if (eval_next == n()) break;
        const int64_t count = std::min(opt.batch_size, n() - eval_next);
        for (int64_t k = 0; k < count; ++k) job->ids.push_back(eval_next + k);
        job->epochs.assign(size_t(count), 0);
        eval_next += count;
        job->state_after = {{"index", eval_next}};
      }
      job->images = Tensor::empty({job->size(), opt.channels, opt.image_size, opt.image_size});
      job->labels = Tensor::empty({job->size()}, DType::Int64);
      jobs.push_back(std::move(job));
    }
    work_cv.notify_all();
  }

  // Drops the queue (lock held) once the samples workers already claimed are finished.
  void discard(std::unique_lock<std::mutex>& lock) {
    for (auto& job : jobs) job->cancelled = true;
    done_cv.wait(lock, [&] {
      return std::all_of(jobs.begin(), jobs.end(), [](const auto& j) { return j->done == j->claimed; });
    });
    jobs.clear();
  }

  Job* claimable() const {
    for (const auto& job : jobs)
      if (!job->cancelled && job->claimed < job->size()) return job.get();
    return nullptr;
  }

  void worker() {
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      Job* job = nullptr;
      work_cv.wait(lock, [&] { return stop || (job = claimable()) != nullptr; });
      if (stop) return;
      const int64_t k = job->claimed++;
      lock.unlock();
      std::exception_ptr error;
      try {
        load_sample(*job, k);
      } catch (...) { error = std::current_exception(); }
      lock.lock();
      if (error && !job->error) job->error = error;
      ++job->done;
      done_cv.notify_all();
    }
  }

  // Sample k of `job`: its id, or the first readable id after it (wrapping), with the id's augmentation.
  void load_sample(Job& job, int64_t k) {
    const int64_t id = job.ids[size_t(k)];
    float* out = job.images.data<float>() + k * opt.channels * opt.image_size * opt.image_size;
    for (int64_t t = 0; t < n(); ++t) {
      const int64_t candidate = (id + t) % n();
      if (bad[size_t(candidate)].load(std::memory_order_relaxed)) continue;
      try {
        Generator gen = sample_generator(opt.seed, job.epochs[size_t(k)], id);
        load_image(candidate, gen, out);
        job.labels.data<int64_t>()[k] = index.labels[size_t(candidate)];
        return;
      } catch (const Error& e) {
        if (bad[size_t(candidate)].exchange(true)) continue;
        std::lock_guard<std::mutex> guard(warn_mu);
        opt.warn("image_folder: skipping unreadable image (the next readable one takes its place): " +
                 std::string(e.what()));
      }
    }
    MOH_FAIL("image_folder: none of the ", n(), " images in '", index.folder, "' could be read");
  }

  // Reads, decodes and transforms file `id` into out[C, S, S].
  void load_image(int64_t id, Generator& gen, float* out) const {
    const std::string& path = index.files[size_t(id)];
    const std::vector<uint8_t> bytes = read_file_bytes(path);
    const int64_t size = opt.image_size;
    SampleGrid grid;
    Image img = decode_image(bytes.data(), bytes.size(), opt.channels, path, [&](int64_t h, int64_t w) {
      grid = opt.train
                 ? crop_resize_grid(random_resized_crop_box(h, w, opt.scale, opt.ratio, gen), size, size)
                 : resize_center_crop_grid(h, w, resize, size);
      return opt.jpeg_reduction ? max_reduction(grid) : int64_t(1);
    }, opt.decode_budget_mb << 20);
    const bool flip = opt.train && uniform01(gen) < opt.hflip;
    if (img.reduction > 1) grid = reduce_grid(grid, img.reduction, img.height, img.width);
    resample_normalize(img, grid, size, size, flip, opt.mean.data(), opt.std_dev.data(), out);
  }
};

namespace {

void check_options(const ImageFolderOptions& o) {
  const char* op = "ImageFolderLoader";
  MOH_CHECK(!o.root.empty() && !o.split.empty(), op, ": root and split must be set");
  MOH_CHECK(o.batch_size >= 1, op, ": batch_size must be >= 1, got ", o.batch_size);
  MOH_CHECK(o.image_size >= 1 && o.image_size <= 8192, op, ": image_size must be in 1..8192, got ",
            o.image_size);
  MOH_CHECK(o.channels == 1 || o.channels == 3, op, ": channels must be 1 or 3, got ", o.channels);
  MOH_CHECK(o.eval_resize == 0 || o.eval_resize >= o.image_size, op,
            ": eval_resize must be 0 (automatic) or >= image_size ", o.image_size, ", got ", o.eval_resize);
  MOH_CHECK(o.scale[0] > 0 && o.scale[0] <= o.scale[1], op,
            ": scale must satisfy 0 < scale[0] <= scale[1], got (", o.scale[0], ", ", o.scale[1], ")");
  MOH_CHECK(o.ratio[0] > 0 && o.ratio[0] <= o.ratio[1], op,
            ": ratio must satisfy 0 < ratio[0] <= ratio[1], got (", o.ratio[0], ", ", o.ratio[1], ")");
  MOH_CHECK(o.hflip >= 0 && o.hflip <= 1, op, ": hflip must be a probability in [0, 1], got ", o.hflip);
  MOH_CHECK(int64_t(o.mean.size()) == o.channels && int64_t(o.std_dev.size()) == o.channels, op,
            ": mean and std_dev need one value per channel (", o.channels, "), got ", o.mean.size(), " and ",
            o.std_dev.size());
  for (float s : o.std_dev) MOH_CHECK(s > 0, op, ": std_dev values must be > 0, got ", s);
  MOH_CHECK(o.threads >= 1 && o.threads <= 256, op, ": threads must be in 1..256, got ", o.threads);
  MOH_CHECK(o.prefetch >= 1, op, ": prefetch must be >= 1, got ", o.prefetch);
  MOH_CHECK(o.decode_budget_mb >= 1 && o.decode_budget_mb <= (int64_t(1) << 30), op,
            ": decode_budget_mb must be in 1..", int64_t(1) << 30, ", got ", o.decode_budget_mb);
}

}  // namespace

ImageFolderLoader::ImageFolderLoader(ImageFolderOptions options) {
  check_options(options);
  ImageFolderIndex index = scan_image_folder(options.root, options.split);
  impl_ = std::make_unique<Impl>(std::move(options), std::move(index));
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->schedule();
  }
  try {
    for (int64_t t = 0; t < impl_->opt.threads; ++t) impl_->threads.emplace_back([this] { impl_->worker(); });
  } catch (...) {
    impl_->join();
    throw;
  }
}

ImageFolderLoader::~ImageFolderLoader() { impl_->join(); }

std::optional<ImageBatch> ImageFolderLoader::next() {
  Impl& m = *impl_;
  std::unique_lock<std::mutex> lock(m.mu);
  if (m.jobs.empty()) return std::nullopt;  // only evaluation runs out
  Impl::Job& front = *m.jobs.front();
  m.done_cv.wait(lock, [&] { return front.done == front.size(); });
  std::unique_ptr<Impl::Job> job = std::move(m.jobs.front());
  m.jobs.pop_front();
  m.consumed = job->state_after;
  m.schedule();
  lock.unlock();
  if (job->error) std::rethrow_exception(job->error);
  return ImageBatch{std::move(job->images), std::move(job->labels)};
}

void ImageFolderLoader::restart() {
  MOH_CHECK(!impl_->opt.train, "ImageFolderLoader::restart: only evaluation loaders have passes (a training ",
            "loader runs on; use load_state to move it)");
  load_state({{"index", 0}});
}

std::map<std::string, int64_t> ImageFolderLoader::state() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->consumed;
}

void ImageFolderLoader::load_state(const std::map<std::string, int64_t>& state) {
  Impl& m = *impl_;
  std::unique_lock<std::mutex> lock(m.mu);
  if (m.opt.train) {
    EpochSampler sampler = m.sampler;
    sampler.load_state(state);  // validates before anything changes
    m.discard(lock);
    m.sampler = std::move(sampler);
  } else {
    MOH_CHECK(state.count("index"), "ImageFolderLoader::load_state: an evaluation position needs 'index'");
    const int64_t index = state.at("index");
    MOH_CHECK(index >= 0 && index <= m.n(), "ImageFolderLoader::load_state: index ", index,
              " is outside the ", m.n(), " images of '", m.index.folder, "'");
    m.discard(lock);
    m.eval_next = index;
  }
  m.consumed = m.opt.train ? m.sampler.state() : std::map<std::string, int64_t>{{"index", m.eval_next}};
  m.schedule();
}

const std::vector<std::string>& ImageFolderLoader::classes() const { return impl_->index.classes; }
const ImageFolderIndex& ImageFolderLoader::index() const { return impl_->index; }
int64_t ImageFolderLoader::size() const { return impl_->n(); }
const ImageFolderOptions& ImageFolderLoader::options() const { return impl_->opt; }

}  // namespace moh
