// Safetensors: round trip of every dtype (0-d, empty, strided and broadcast inputs), metadata,
// the exact on-disk layout, atomic overwrite, and every corruption the loader must reject, each on
// a real file in a temp dir with an error that names the file (and the tensor where there is one).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/factory.h"
#include "core/io/safetensors.h"
#include "core/ops.h"
#include "tests/test_util.h"

namespace moh {
namespace {

namespace fs = std::filesystem;

class Safetensors : public test::TempDirTest {
 protected:
  // Writes a file from a header string (length prefix added) and a data buffer.
  std::string write_raw(const std::string& name, const std::string& header, const std::string& data) const {
    std::string p = path(name);
    std::ofstream out(p, std::ios::binary);
    uint64_t n = header.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out << header << data;
    return p;
  }

  // load_safetensors must throw an Error mentioning the file and every string in `parts`.
  void expect_load_error(const std::string& p, const std::vector<std::string>& parts) const {
    try {
      load_safetensors(p);
      ADD_FAILURE() << "no error loading " << p;
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(p), std::string::npos) << msg;
      for (const auto& part : parts) EXPECT_NE(msg.find(part), std::string::npos) << "'" << part << "' in: " << msg;
    }
  }

  fs::path dir_;
};

using test::expect_same_bytes;

TEST_F(Safetensors, RoundTripsEveryDtypeAndLayout) {
  Tensor base = arange(-6.0, 6.0, 1.0, DType::Float64).view({3, 4});
  std::map<std::string, Tensor> tensors{
      {"f32", mul(base, 0.37).to(DType::Float32)},
      {"f64", mul(base, 1.0 / 3.0)},
      {"bf16", mul(base, 0.3).to(DType::BFloat16)},
      {"f16", mul(base, 0.3).to(DType::Float16)},
      {"i32", base.to(DType::Int32)},
      {"i64", mul(base, 1e12).to(DType::Int64)},
      {"u8", add(base, 6.0).to(DType::UInt8)},
      {"bool", gt(base, 0.5)},
      {"scalar", scalar_tensor(2.5, DType::Float64)},
      {"empty", zeros({0, 3}, DType::Float32)},
      {"transposed", mul(base, 0.5).to(DType::Float32).t()},
      {"sliced", base.slice(1, 0, 4, 2).to(DType::Int64)},
      {"broadcast", base.select(0, 1).unsqueeze(0).expand({5, 4})},
      {"blocks.3.attn.qkv.weight", ones({2, 2})},
  };
  const std::string p = path("all.safetensors");
  save_safetensors(p, tensors);
  EXPECT_FALSE(fs::exists(p + ".tmp"));
  auto loaded = load_safetensors(p);
  ASSERT_EQ(loaded.size(), tensors.size());
  for (const auto& [name, t] : tensors) expect_same_bytes(loaded[name], t, name);
  EXPECT_TRUE(load_safetensors_metadata(p).empty());
}

TEST_F(Safetensors, OnDiskLayoutFollowsTheFormat) {
  const std::string p = path("layout.safetensors");
  save_safetensors(p, {{"b", from_vector<int32_t>({7, 8}, {2})}, {"a", from_vector<float>({1.5f}, {1, 1})}},
                   {{"format", "pt"}});
  std::ifstream in(p, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  ASSERT_EQ(bytes.size(), 8 + n + 12);
  const std::string header = bytes.substr(8, n);
  EXPECT_NE(header.find("\"__metadata__\":{\"format\":\"pt\"}"), std::string::npos) << header;
  EXPECT_NE(header.find("\"a\":{\"data_offsets\":[0,4],\"dtype\":\"F32\",\"shape\":[1,1]}"), std::string::npos);
  EXPECT_NE(header.find("\"b\":{\"data_offsets\":[4,12],\"dtype\":\"I32\",\"shape\":[2]}"), std::string::npos);
  float a;
  int32_t b[2];
  std::memcpy(&a, bytes.data() + 8 + n, 4);
  std::memcpy(b, bytes.data() + 8 + n + 4, 8);
  EXPECT_EQ(a, 1.5f);
  EXPECT_EQ(b[0], 7);
  EXPECT_EQ(b[1], 8);
}

TEST_F(Safetensors, MetadataAndEmptyFileAndOverwrite) {
  const std::string p = path("meta.safetensors");
  std::map<std::string, std::string> meta{{"step", "1200"}, {"config", "{\"dim\": 64}"}, {"note", "ünïcode"}};
  save_safetensors(p, {}, meta);
  EXPECT_TRUE(load_safetensors(p).empty());
  EXPECT_EQ(load_safetensors_metadata(p), meta);
  // Overwriting replaces the file as a whole.
  save_safetensors(p, {{"x", ones({3})}});
  EXPECT_TRUE(load_safetensors_metadata(p).empty());
  EXPECT_EQ(load_safetensors(p).at("x").to_vector<float>(), std::vector<float>(3, 1.0f));
  EXPECT_FALSE(fs::exists(p + ".tmp"));
}

TEST_F(Safetensors, SaveRejectsBadInputsAndLeavesNoFile) {
  const std::string p = path("bad.safetensors");
  EXPECT_THROW(save_safetensors(p, {{"x", Tensor()}}), Error);
  EXPECT_THROW(save_safetensors(p, {{"__metadata__", ones({1})}}), Error);
  EXPECT_THROW(save_safetensors(p, {{"", ones({1})}}), Error);
  EXPECT_FALSE(fs::exists(p));
  const std::string missing = path("no/such/dir/x.safetensors");
  try {
    save_safetensors(missing, {{"x", ones({1})}});
    ADD_FAILURE() << "saved into a missing directory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(missing + ".tmp"));
  // A failed save keeps the previous file intact.
  save_safetensors(p, {{"x", ones({2})}});
  EXPECT_THROW(save_safetensors(p, {{"x", ones({2})}, {"y", Tensor()}}), Error);
  EXPECT_EQ(load_safetensors(p).at("x").to_vector<float>(), std::vector<float>(2, 1.0f));
}

TEST_F(Safetensors, RejectsUnreadableAndTruncatedFiles) {
  expect_load_error(path("missing.safetensors"), {"cannot open"});
  fs::create_directories(path("dir.safetensors"));
  expect_load_error(path("dir.safetensors"), {"not a regular file"});
  std::string p = path("empty.safetensors");
  std::ofstream(p).close();
  expect_load_error(p, {"truncated"});
  p = path("short.safetensors");
  std::ofstream(p, std::ios::binary) << "abc";
  expect_load_error(p, {"truncated"});
  // Header length beyond the file.
  p = path("long_header.safetensors");
  {
    std::ofstream out(p, std::ios::binary);
    uint64_t n = 1000;
    out.write(reinterpret_cast<const char*>(&n), 8);
    out << "{}";
  }
  expect_load_error(p, {"header length 1000"});
  // Data cut short after a valid header.
  p = write_raw("cut.safetensors", R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", std::string(8, '\0'));
  expect_load_error(p, {"'x'", "run past"});
}

TEST_F(Safetensors, RejectsBadHeaders) {
  expect_load_error(write_raw("json.safetensors", "{\"x\": [1, 2", ""), {"not valid JSON"});
  expect_load_error(write_raw("array.safetensors", "[1, 2]", ""), {"JSON object"});
  expect_load_error(write_raw("entry.safetensors", R"({"x": 3})", ""), {"'x'"});
  expect_load_error(write_raw("dtype.safetensors", R"({"w":{"dtype":"I8","shape":[2],"data_offsets":[0,2]}})",
                              std::string(2, '\0')),
                    {"'w'", "unsupported dtype 'I8'"});
  expect_load_error(write_raw("nodtype.safetensors", R"({"w":{"shape":[2],"data_offsets":[0,8]}})", std::string(8, 0)),
                    {"'w'", "dtype"});
  expect_load_error(write_raw("shape.safetensors", R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})",
                              std::string(8, '\0')),
                    {"'w'", "shape"});
  expect_load_error(write_raw("shape2.safetensors", R"({"w":{"dtype":"F32","shape":"2","data_offsets":[0,8]}})",
                              std::string(8, '\0')),
                    {"'w'", "shape"});
  expect_load_error(write_raw("offs.safetensors", R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0]}})",
                              std::string(8, '\0')),
                    {"'w'", "data_offsets"});
  expect_load_error(write_raw("huge.safetensors",
                              R"({"w":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}})",
                              std::string(8, '\0')),
                    {"'w'", "too large"});
  expect_load_error(write_raw("meta.safetensors", R"({"__metadata__":{"step":12}})", ""), {"metadata 'step'"});
  expect_load_error(write_raw("meta2.safetensors", R"({"__metadata__":[1]})", ""), {"__metadata__"});
}

TEST_F(Safetensors, RejectsBadOffsets) {
  const std::string data(16, '\0');
  expect_load_error(write_raw("range.safetensors", R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[4,20]}})", data),
                    {"'w'", "run past"});
  expect_load_error(write_raw("size.safetensors", R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", data),
                    {"'w'", "need 12"});
  expect_load_error(write_raw("order.safetensors", R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})", data),
                    {"'w'", "end before"});
  expect_load_error(write_raw("overlap.safetensors",
                              R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]},)"
                              R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
                              data),
                    {"'b'", "overlap tensor 'a'"});
  expect_load_error(write_raw("hole.safetensors",
                              R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                              R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
                              data),
                    {"'b'", "hole of 4 bytes"});
  expect_load_error(write_raw("tail.safetensors", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", data),
                    {"8 bytes after the last tensor"});
  expect_load_error(write_raw("bool.safetensors", R"({"m":{"dtype":"BOOL","shape":[4],"data_offsets":[0,4]}})",
                              std::string("\x01\x00\x02\x00", 4)),
                    {"'m'", "element 2", "byte value 2"});
  // Hand-written but valid, with space padding after the JSON: loads.
  const std::string ok = write_raw("ok.safetensors",
                                   R"({"a":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}}   )", data);
  EXPECT_EQ(load_safetensors(ok).at("a").to_vector<int64_t>(), (std::vector<int64_t>{0, 0}));
}

}  // namespace
}  // namespace moh
