// moh_bench_text: single-thread encode throughput (MB/s of input text) of a moh tokenizer, the number
// scripts/bench_text.sh puts beside npm tiktoken's (bench/text/tiktoken_speed.js) on the same text.
// Usage: moh_bench_text --tokenizer FILE --text FILE [--repeats 5]
// Prints one JSON line: {"tokenizer", "bytes", "tokens", "ids_fnv1a", "best_seconds", "mb_per_s"} (best of
// the repeats, MB = 10^6 bytes; ids_fnv1a: FNV-1a over the ids, the same digest tiktoken_speed.js prints).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/text/file_bytes.h"
#include "data/text/tokenizer.h"

int main(int argc, char** argv) {
  std::string tokenizer_path, text_path;
  int repeats = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--tokenizer") tokenizer_path = value;
    else if (key == "--text") text_path = value;
    else if (key == "--repeats") repeats = std::atoi(value.c_str());
    else {
      std::fprintf(stderr, "moh_bench_text: unknown option '%s'\n", key.c_str());
      return 2;
    }
  }
  if (tokenizer_path.empty() || text_path.empty() || repeats < 1) {
    std::fprintf(stderr, "usage: moh_bench_text --tokenizer FILE --text FILE [--repeats 5]\n");
    return 2;
  }
  try {
    const auto tokenizer = moh::text::load_tokenizer(tokenizer_path);
    const std::string text = moh::text::read_file_bytes(text_path);
    double best = 1e30;
    std::vector<moh::text::TokenId> ids;
    for (int r = 0; r < repeats; ++r) {
      const auto start = std::chrono::steady_clock::now();
      ids = tokenizer->encode_ordinary(text);
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    uint32_t digest = 2166136261u;
    for (const moh::text::TokenId id : ids) digest = (digest ^ uint32_t(id)) * 16777619u;
    std::printf("{\"tokenizer\": \"%s\", \"bytes\": %zu, \"tokens\": %zu, \"ids_fnv1a\": %u, \"best_seconds\": %.4f, "
                "\"mb_per_s\": %.2f}\n",
                tokenizer_path.c_str(), text.size(), ids.size(), digest, best, double(text.size()) / best / 1e6);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moh_bench_text: %s\n", e.what());
    return 1;
  }
  return 0;
}
