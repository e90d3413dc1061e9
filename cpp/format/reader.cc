// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file format/reader.cc
 * \brief The format's bounds-checked parser (format.h), one function per section as written.
 */
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "format/common.h"
#include "format/format.h"

namespace tvm_partial {
namespace format {

namespace {

#ifdef TVM_PARTIAL_FUZZING
// A coverage-guided fuzzer cannot get past a checksum; the fuzz build checks everything else.
constexpr bool kVerifyChecksums = false;
#else
constexpr bool kVerifyChecksums = true;
#endif

[[noreturn]] void Corrupt(const std::string& msg) {
  TVM_FFI_THROW(ValueError) << "corrupted partial_apply data: " << msg;
  TVM_FFI_UNREACHABLE();
}

class Reader {
 public:
  Reader(const char* data, size_t begin, size_t end) : data_(data), pos_(begin), end_(end) {}

  template <typename T>
  T Get(const char* what) {
    Need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string GetStr(const char* what) {
    uint32_t n = Get<uint32_t>(what);
    Need(n, what);
    if (!IsValidUtf8(data_ + pos_, n)) {
      Corrupt(std::string(what) + " at byte " + std::to_string(pos_) + " is not valid UTF-8");
    }
    std::string s(data_ + pos_, n);
    pos_ += n;
    return s;
  }
  // A count of items each at least `min_item` bytes long.
  uint32_t GetCount(const char* what, size_t min_item) {
    uint32_t n = Get<uint32_t>(what);
    if (static_cast<uint64_t>(n) * min_item > end_ - pos_) {
      Corrupt(std::string(what) + " " + std::to_string(n) + " cannot fit in the " +
              std::to_string(end_ - pos_) + " bytes of metadata left");
    }
    return n;
  }
  size_t left() const { return end_ - pos_; }

 private:
  void Need(size_t n, const char* what) {
    if (n > end_ - pos_) {
      Corrupt(std::string(what) + " at byte " + std::to_string(pos_) + " needs " +
              std::to_string(n) + " bytes, " + std::to_string(end_ - pos_) + " left");
    }
  }
  const char* data_;
  size_t pos_;
  size_t end_;
};

void ReadOutputs(Reader* r, ParsedFunction* fn, uint32_t num_names) {
  const std::string who = "function '" + std::string(fn->name) + "'";
  uint32_t count = r->GetCount("output count", 16);
  for (uint32_t k = 0; k < count; ++k) {
    Output o;
    o.position = r->Get<int64_t>("output position");
    const std::string where = who + " output at position " + std::to_string(o.position);
    std::string dtype = r->GetStr("output dtype");
    try {
      o.dtype = ffi::StringToDLDataType(dtype);
    } catch (const ffi::Error&) {
      Corrupt(where + ": unknown dtype '" + dtype + "'");
    }
    uint32_t ndim = r->Get<uint32_t>("output ndim");
    if (ndim > kMaxNdim) {
      Corrupt(where + ": ndim " + std::to_string(ndim) + " exceeds " + std::to_string(kMaxNdim));
    }
    for (uint32_t d = 0; d < ndim; ++d) {  // a braced list is evaluated in order: source, value
      o.shape.push_back(OutputDim{r->Get<int64_t>("output dimension source"),
                                  r->Get<int64_t>("output dimension value")});
    }
    fn->outputs.push_back(std::move(o));
  }
  std::vector<int64_t> bound;
  for (const ParsedValue& v : fn->values) bound.push_back(v.index);
  try {
    detail::ValidateRecordedOutputs(fn->outputs, bound, num_names, who);
  } catch (const ffi::Error& err) {
    Corrupt(err.message());
  }
}

// Each shard on a tensor binding of `fn` that can be split as recorded (ShardProblem, as at bind).
void ReadShards(Reader* r, ParsedFunction* fn) {
  const uint32_t count = r->GetCount("shard count", 17 + 2 * 8);
  for (uint32_t k = 0; k < count; ++k) {
    Shard s;
    s.position = r->Get<int64_t>("shard position");
    s.dim = r->Get<uint32_t>("shard dim");
    s.world = r->Get<uint32_t>("shard world");
    s.layout = r->Get<uint8_t>("shard layout");
    const std::string where = Where(*fn, s.position);
    if (s.position <= (fn->shards.empty() ? -1 : fn->shards.back().position)) {
      Corrupt(where + ": shard record is negative or out of order");
    }
    if (s.layout != kShardRows && s.layout != kShardMajor) {
      Corrupt(where + ": unknown shard layout " + std::to_string(s.layout) +
              " (this tvm-partial reads layouts 0, rows, and 1, shard-major); upgrade "
              "tvm-partial");
    }
    if (s.layout == kShardMajor) s.segments = r->Get<uint32_t>("shard segments");
    const auto bound = std::find_if(fn->values.begin(), fn->values.end(),
                                    [&](const ParsedValue& v) { return v.index == s.position; });
    if (bound == fn->values.end() || bound->kind != kTensor) {
      Corrupt(where + ": shard record for a position that binds no tensor");
    }
    const std::string problem =
        ShardProblem(bound->tensor.shape, bound->tensor.dtype, s.dim, s.world, s.segments);
    if (!problem.empty()) Corrupt(where + ": shard record: " + problem);
    // One layout per split (the writer has no choice): another is a crafted or damaged record.
    const uint8_t layout = ShardLayout(bound->tensor.shape, s.dim, s.segments);
    if (s.layout != layout) {
      Corrupt(where + ": shard record says layout " + std::to_string(s.layout) + " where dim " +
              std::to_string(s.dim) + " with " + std::to_string(s.segments) +
              " segment(s) is stored in layout " + std::to_string(layout));
    }
    if (static_cast<uint64_t>(s.world) * 8 > r->left()) {  // before reserving: world is checked
      Corrupt(where + ": the hashes of " + std::to_string(s.world) + " ranks cannot fit in the " +
              std::to_string(r->left()) + " bytes of metadata left");
    }
    s.hashes.reserve(static_cast<size_t>(s.world));
    for (int64_t k = 0; k < s.world; ++k) s.hashes.push_back(r->Get<uint64_t>("shard hash"));
    fn->shards.push_back(std::move(s));
  }
}

// Returns the flags and sets `*meta_end`, version and total.
uint32_t ReadHeader(const char* data, size_t size, Parsed* out, size_t* meta_end) {
  static_assert(sizeof(uint64_t) == 8 && sizeof(double) == 8);
  if (size < kHeaderSize) {
    Corrupt("truncated: " + std::to_string(size) + " bytes is shorter than the " +
            std::to_string(kHeaderSize) + "-byte header");
  }
  if (std::memcmp(data, kMagic, sizeof(kMagic)) != 0) {
    TVM_FFI_THROW(ValueError) << "not partial_apply data: bad magic (expected \"TVMPARTL\")";
  }
  Reader header(data, sizeof(kMagic), kHeaderSize);
  out->version = header.Get<uint32_t>("version");
  if (out->version != kVersion) {  // development builds wrote 1 and 2; 0 was never written
    const bool newer = out->version > kVersion;
    TVM_FFI_THROW(ValueError) << "partial_apply data has format version " << out->version
                              << (newer ? ", newer" : ", older") << " than this tvm-partial reads ("
                              << kVersion << "); "
                              << (newer ? "upgrade tvm-partial"
                                        : "export the model again with this tvm-partial");
  }
  const uint32_t flags = header.Get<uint32_t>("flags");
  if (flags != 0 && flags != (kFlagExternalPayloads | kFlagWeightsFile) &&
      flags != (kFlagExternalPayloads | kFlagAppended)) {
    Corrupt("unknown flags " + std::to_string(flags));
  }
  out->total = header.Get<uint64_t>("total size");
  if (out->total != size) {
    Corrupt("size mismatch: the header says " + std::to_string(out->total) + " bytes, got " +
            std::to_string(size) + (size < out->total ? " (truncated)" : ""));
  }
  const uint64_t meta_size = header.Get<uint64_t>("metadata size");
  if (meta_size > size - kHeaderSize) {
    Corrupt("metadata of " + std::to_string(meta_size) + " bytes runs past the end (" +
            std::to_string(size) + " bytes)");
  }
  const uint64_t meta_hash = header.Get<uint64_t>("metadata hash");
  if (kVerifyChecksums && meta_hash != MetadataHash(data, meta_size)) {
    Corrupt("metadata checksum mismatch");
  }
  *meta_end = kHeaderSize + static_cast<size_t>(meta_size);
  return flags;
}

// Flag 1: the region record (symbol, link, size; flag 2: the weights file's name).
void ReadPlacement(Reader* r, uint32_t flags, Parsed* out) {
  out->placement = (flags & kFlagAppended) ? Placement::kAppended : Placement::kWeightsFile;
  out->symbol = r->GetStr("payload region symbol");
  out->link = r->Get<uint64_t>("payload region link");
  out->region_size = r->Get<uint64_t>("payload region size");
  if (flags & kFlagWeightsFile) {
    out->weights_file = r->GetStr("weights file name");
    if (out->weights_file.empty() || out->weights_file.find('\0') != std::string::npos) {
      Corrupt("the weights file name is empty or holds a NUL byte");
    }
  }
  if (out->symbol.rfind(kRegionSymbolPrefix, 0) != 0) {
    Corrupt("payload region symbol '" + out->symbol + "' does not start with " +
            kRegionSymbolPrefix);
  }
  if (out->region_size < kRegionHeaderSize) {
    Corrupt("payload region of " + std::to_string(out->region_size) +
            " bytes cannot hold its 64-byte header");
  }
}

// Where payloads must lie (docs/format.md): 64-aligned, zero-padded, ending exactly at `limit`.
struct Layout {
  const char* data;  // the blob, whose padding bytes are checked, when inline; else null
  uint64_t limit;    // the blob's size (inline) or the region's
  uint64_t end;      // where the last payload ended: the next starts at AlignUp(end)
};

void ReadTensor(Reader* r, const std::string& where, Layout* layout, TensorMeta* t) {
  std::string dtype = r->GetStr("tensor dtype");
  try {
    t->dtype = ffi::StringToDLDataType(dtype);
  } catch (const ffi::Error&) {
    Corrupt(where + ": unknown dtype '" + dtype + "'");
  }
  if (std::string(ffi::DLDataTypeToString(t->dtype)) != dtype) {
    Corrupt(where + ": dtype '" + dtype + "' is not written as the writer writes it ('" +
            std::string(ffi::DLDataTypeToString(t->dtype)) + "')");
  }
  t->device_type = r->Get<int32_t>("device type");
  t->device_id = r->Get<int32_t>("device id");
  std::string problem = TensorProblem(t->dtype, t->device_type, t->device_id);
  if (!problem.empty()) Corrupt(where + ": " + problem);
  const uint32_t ndim = r->Get<uint32_t>("tensor ndim");
  if (ndim > kMaxNdim) {
    Corrupt(where + ": ndim " + std::to_string(ndim) + " exceeds " + std::to_string(kMaxNdim));
  }
  for (uint32_t i = 0; i < ndim; ++i) t->shape.push_back(r->Get<int64_t>("tensor shape"));
  t->nbytes = r->Get<uint64_t>("tensor byte length");
  t->offset = r->Get<uint64_t>("tensor payload offset");
  t->hash = r->Get<uint64_t>("tensor payload hash");
  uint64_t expected_bytes = 0;
  problem = ShapeProblem(t->shape.data(), t->shape.size(), t->dtype, &expected_bytes);
  if (!problem.empty()) Corrupt(where + ": " + problem);
  if (t->nbytes != expected_bytes) {
    Corrupt(where + ": byte length " + std::to_string(t->nbytes) +
            " does not match its shape and dtype (" + std::to_string(expected_bytes) + ")");
  }
  if (t->offset != AlignUp(layout->end)) {
    Corrupt(where + ": payload offset " + std::to_string(t->offset) + " is not the expected " +
            std::to_string(AlignUp(layout->end)));
  }
  if (t->offset > layout->limit || t->nbytes > layout->limit - t->offset) {
    Corrupt(where + ": payload of " + std::to_string(t->nbytes) + " bytes at offset " +
            std::to_string(t->offset) + " runs past the end (" + std::to_string(layout->limit) +
            " bytes)");
  }
  for (uint64_t pad = layout->end; layout->data != nullptr && pad < t->offset; ++pad) {
    if (layout->data[pad] != 0) Corrupt("non-zero padding byte at " + std::to_string(pad));
  }
  layout->end = t->offset + t->nbytes;
}

// A tensor (kind 5) becomes the next of `out->payloads`; a shared one (kind 6) refers to one.
ParsedValue ReadBinding(Reader* r, const ParsedFunction& fn, size_t num_names, Layout* layout,
                        Parsed* out) {
  ParsedValue v;
  v.index = r->Get<int64_t>("position");
  const std::string where = Where(fn, v.index);
  if (v.index <= (fn.values.empty() ? -1 : fn.values.back().index)) {
    Corrupt(where + " is negative or out of order");
  }
  if (v.index > detail::kMaxPosition) {
    Corrupt(where + " cannot be reached: a call passes at most " +
            std::to_string(detail::kMaxCallArgs) + " arguments, so positions go up to " +
            std::to_string(detail::kMaxPosition));
  }
  if (num_names > 0 && v.index >= static_cast<int64_t>(num_names)) {
    Corrupt(where + " is past its " + std::to_string(num_names) + " parameters");
  }
  v.kind = r->Get<uint8_t>("value kind");
  switch (v.kind) {
    case kNone:
      v.scalar = nullptr;
      break;
    case kInt:
      v.scalar = r->Get<int64_t>("int value");
      break;
    case kFloat:
      v.scalar = r->Get<double>("float value");
      break;
    case kBool: {
      const uint8_t b8 = r->Get<uint8_t>("bool value");
      if (b8 > 1) Corrupt(where + ": bool value " + std::to_string(b8));
      v.scalar = b8 == 1;
      break;
    }
    case kStr:
      v.scalar = ffi::String(r->GetStr("str value"));
      break;
    case kTensor:
      ReadTensor(r, where, layout, &v.tensor);
      v.payload = out->payloads.size();
      out->payloads.emplace_back(out->functions.size(), fn.values.size());
      break;
    case kSharedTensor: {
      v.payload = r->Get<uint64_t>("shared tensor payload");
      if (v.payload >= out->payloads.size()) {
        Corrupt(where + ": shares payload " + std::to_string(v.payload) + ", but only " +
                std::to_string(out->payloads.size()) + " tensor payloads come before it");
      }
      const auto [f, b] = out->payloads[v.payload];
      // Its owner is in an earlier function, or earlier in this one (not yet in out->functions).
      v.tensor = (f < out->functions.size() ? out->functions[f].values[b] : fn.values[b]).tensor;
      break;
    }
    default:
      Corrupt(where + ": unknown value kind " + std::to_string(v.kind));
  }
  return v;
}

ParsedFunction ReadFunction(Reader* r, Layout* layout, Parsed* out) {
  ParsedFunction fn;
  fn.name = r->GetStr("function name");
  const uint32_t num_names = r->GetCount("parameter name count", 4);
  for (uint32_t i = 0; i < num_names; ++i) fn.param_names.push_back(r->GetStr("parameter name"));
  const uint32_t num_bound = r->GetCount("binding count", 9);
  for (uint32_t b = 0; b < num_bound; ++b) {
    fn.values.push_back(ReadBinding(r, fn, num_names, layout, out));
  }
  ReadOutputs(r, &fn, num_names);
  ReadShards(r, &fn);
  return fn;
}

}  // namespace

Parsed Parse(const char* data, size_t size) {
  Parsed out;
  size_t meta_end = 0;
  const uint32_t flags = ReadHeader(data, size, &out, &meta_end);
  Reader r(data, kHeaderSize, meta_end);
  Layout layout{data, size, meta_end};
  if (flags & kFlagExternalPayloads) {
    ReadPlacement(&r, flags, &out);
    if (size != meta_end) Corrupt("data after the metadata of a blob whose payloads are external");
    layout = {nullptr, out.region_size, kRegionHeaderSize};
  }
  const uint32_t num_functions = r.GetCount("function count", 12);
  std::unordered_set<std::string> seen;  // function names so far: duplicates in O(1) each
  seen.reserve(num_functions);
  out.functions.reserve(num_functions);
  for (uint32_t f = 0; f < num_functions; ++f) {
    out.functions.push_back(ReadFunction(&r, &layout, &out));
    const std::string& name = out.functions.back().name;
    if (!seen.insert(name).second) Corrupt("function '" + name + "' appears twice");
  }
  // A shared tensor is bound whole: a sharded one cannot be shared (the writer refuses it too).
  for (const ParsedFunction& fn : out.functions) {
    for (const ParsedValue& v : fn.values) {
      if (v.kind != kSharedTensor) continue;
      const auto [f, b] = out.payloads[v.payload];
      const ParsedFunction& owner = out.functions[f];
      for (const Shard& s : owner.shards) {
        if (s.position == owner.values[b].index) {
          Corrupt(Where(fn, v.index) + " shares the payload of " + Where(owner, s.position) +
                  ", which is sharded: a shared tensor is bound whole");
        }
      }
    }
  }
  if (r.left() != 0) Corrupt(std::to_string(r.left()) + " unread bytes at the end of the metadata");
  if (layout.end != layout.limit) {
    Corrupt(std::to_string(layout.limit - layout.end) + " bytes after the last payload");
  }
  return out;
}

}  // namespace format
}  // namespace tvm_partial
