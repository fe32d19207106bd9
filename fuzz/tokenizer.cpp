// Fuzz target: load_tokenizer (data/text/tokenizer.h) on a tokenizer file recognised by its content,
// as `moh tokenize --tokenizer FILE` and `moh tokenizer` reach it: tiktoken ranks (plain or gzip), an
// HF tokenizer.json, a SentencePiece .model or a character tokenizer's JSON. A file that loads then
// encodes and decodes a short text (text its vocabulary cannot hold is a moh::Error, as expected).
#include <fstream>
#include <sstream>

#include "data/text/char_tokenizer.h"
#include "data/text/tokenizer.h"
#include "fuzz/fuzz_target.h"

namespace {

void read(const uint8_t* data, size_t size) {
  using namespace moh::text;
  const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(moh::fuzz::scratch_file("input.tokenizer", data, size));
  const std::vector<TokenId> ids =
      tokenizer->encode("In the beginning God created the heaven and the earth.\n  1611 \xc3\xbc<|endoftext|>",
                        AllowedSpecial::all());
  tokenizer->decode(ids);
}

// GPT-2's byte-level alphabet: printable Latin-1 bytes stand for themselves, the others for U+0100 on.
std::string byte_level(uint8_t b) {
  static const std::vector<uint32_t> table = [] {
    std::vector<uint32_t> t(256);
    uint32_t next = 256;
    for (uint32_t c = 0; c < 256; ++c)
      t[c] = (c >= '!' && c <= '~') || (c >= 0xa1 && c <= 0xac) || (c >= 0xae) ? c : next++;
    return t;
  }();
  const uint32_t cp = table[b];
  std::string out;
  if (cp < 0x80) out += char(cp);
  else out += {char(0xc0 | (cp >> 6)), char(0x80 | (cp & 0x3f))};
  return out;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
  return out + "\"";
}

void seeds(const moh::fuzz::AddSeed& add) {
  auto text = [&](const std::string& name, const std::string& s) { add(name, moh::fuzz::Bytes(s.begin(), s.end())); };
  text("char.json", moh::text::CharTokenizer({"\n", " ", "I", "a", "e", "h", "n", "t", "\xc3\xbc"}, "seed").to_json());

  // A byte-level BPE tokenizer.json: the 256 bytes, three merges and <|endoftext|>.
  std::string vocab;
  for (int b = 0; b < 256; ++b) vocab += (b ? ", " : "") + json_string(byte_level(uint8_t(b))) + ": " + std::to_string(b);
  vocab += ", \"th\": 256, \"he\": 257, \"the\": 258";
  text("byte_level_bpe.json",
       "{\"version\": \"1.0\", \"added_tokens\": [{\"id\": 259, \"content\": \"<|endoftext|>\", \"special\": true}],"
       " \"normalizer\": null, \"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false,"
       " \"trim_offsets\": true, \"use_regex\": true}, \"model\": {\"type\": \"BPE\", \"dropout\": null,"
       " \"unk_token\": null, \"continuing_subword_prefix\": null, \"end_of_word_suffix\": null,"
       " \"fuse_unk\": false, \"byte_fallback\": false, \"vocab\": {" + vocab + "}, \"merges\": [\"t h\", \"h e\", \"th e\"]}}");

  // A ranks file of 4 tokens (parsed, then refused: no encoding moh knows has 4 ranks).
  text("ranks_small.tiktoken", "IQ== 0\nIg== 1\nIw== 2\nJA== 3\n");

  // A SentencePiece model trained on KJV (the committed fixture; fuzz.sh runs from the repository root).
  std::ifstream model("tests/reference/fixtures/text/kjv_bpe1000.model", std::ios::binary);
  std::stringstream bytes;
  bytes << model.rdbuf();
  MOH_CHECK(model && !bytes.str().empty(), "tokenizer seeds: run from the repository root (scripts/fuzz.sh --seeds)");
  text("kjv_bpe1000.model", bytes.str());
}

}  // namespace

MOH_FUZZ_TARGET(read, seeds)
