// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file format_reader.cc
 * \brief The bounds-checked reader of the partial module format (format.h): Decode rebuilds the
 *        bindings, Describe reports them without reading payloads.
 */
#include <tvm/ffi/container/shape.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm_partial/partial_apply.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "device.h"
#include "format.h"
#include "format_common.h"
#include "hash.h"
#include "payload_region.h"
#include "weights_file.h"

namespace tvm_partial {
namespace format {

namespace {

constexpr uint32_t kMaxNdim = 64;
#ifdef TVM_PARTIAL_FUZZING
// A coverage-guided fuzzer cannot get past a checksum; the fuzz build checks everything else.
constexpr bool kVerifyChecksums = false;
#else
constexpr bool kVerifyChecksums = true;
#endif

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
      TVM_FFI_THROW(ValueError) << "corrupted partial_apply data: " << what << " at byte " << pos_
                                << " is not valid UTF-8";
    }
    std::string s(data_ + pos_, n);
    pos_ += n;
    return s;
  }
  /*! \brief A count of items each at least `min_item` bytes long: refuse counts that cannot fit. */
  uint32_t GetCount(const char* what, size_t min_item) {
    uint32_t n = Get<uint32_t>(what);
    if (static_cast<uint64_t>(n) * min_item > end_ - pos_) {
      TVM_FFI_THROW(ValueError) << "corrupted partial_apply data: " << what << " " << n
                                << " cannot fit in the " << (end_ - pos_)
                                << " bytes of metadata left";
    }
    return n;
  }
  size_t pos() const { return pos_; }
  size_t left() const { return end_ - pos_; }

 private:
  void Need(size_t n, const char* what) {
    if (n > end_ - pos_) {
      TVM_FFI_THROW(ValueError) << "corrupted partial_apply data: " << what << " at byte " << pos_
                                << " needs " << n << " bytes, " << (end_ - pos_) << " left";
    }
  }
  const char* data_;
  size_t pos_;
  size_t end_;
};

struct TensorMeta {
  DLDataType dtype;
  int32_t device_type;
  int32_t device_id;
  std::vector<int64_t> shape;
  uint64_t nbytes;
  uint64_t offset;
  uint64_t hash;
};

struct ParsedValue {
  int64_t index;
  uint8_t kind;
  ffi::Any scalar;  // kinds 0-4
  TensorMeta tensor;
};

struct ParsedFunction {
  ffi::String name;
  ffi::Array<ffi::String> param_names;
  std::vector<ParsedValue> values;
  Outputs outputs;  // version 2
};

struct Parsed {
  uint32_t version;
  uint64_t total;
  bool external = false;     // payloads in a region of the library file
  std::string weights_file;  // flag 2: the region is the data of this safetensors file
  bool appended = false;     // flag 4: the region is appended to the library file
  std::string symbol;        // that region's symbol
  uint64_t link = 0;         // the number the region header must repeat
  uint64_t region_size = 0;
  std::vector<ParsedFunction> functions;
};

[[noreturn]] void Corrupt(const std::string& msg) {
  TVM_FFI_THROW(ValueError) << "corrupted partial_apply data: " << msg;
  TVM_FFI_UNREACHABLE();
}

uint64_t CheckedByteSize(const std::vector<int64_t>& shape, DLDataType dtype,
                         const std::string& where) {
  uint64_t bytes = 0;
  std::string problem = ShapeProblem(shape.data(), shape.size(), dtype, &bytes);
  if (!problem.empty()) Corrupt(where + ": " + problem);
  return bytes;
}

/*! \brief Version 2: the outputs of one function, bounds-checked and checked for consistency. */
void ReadOutputs(Reader* r, ParsedFunction* fn, uint32_t num_names) {
  const std::string who = "function '" + std::string(fn->name) + "'";
  uint32_t count = r->GetCount("output count", 16);
  for (uint32_t k = 0; k < count; ++k) {
    Output o;
    o.position = r->Get<int64_t>("output position");
    std::string dtype = r->GetStr("output dtype");
    try {
      o.dtype = ffi::StringToDLDataType(dtype);
    } catch (const ffi::Error&) {
      Corrupt(who + " output at position " + std::to_string(o.position) + ": unknown dtype '" +
              dtype + "'");
    }
    uint32_t ndim = r->Get<uint32_t>("output ndim");
    if (ndim > kMaxNdim) {
      Corrupt(who + " output at position " + std::to_string(o.position) + ": ndim " +
              std::to_string(ndim) + " exceeds " + std::to_string(kMaxNdim));
    }
    for (uint32_t d = 0; d < ndim; ++d) {
      int64_t source = r->Get<int64_t>("output dimension source");
      int64_t value = r->Get<int64_t>("output dimension value");
      o.shape.push_back(OutputDim{source, value});
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

Parsed Parse(const char* data, size_t size) {
  static_assert(sizeof(uint64_t) == 8 && sizeof(double) == 8);
  if (size < kHeaderSize) {
    Corrupt("truncated: " + std::to_string(size) + " bytes is shorter than the " +
            std::to_string(kHeaderSize) + "-byte header");
  }
  if (std::memcmp(data, kMagic, sizeof(kMagic)) != 0) {
    TVM_FFI_THROW(ValueError) << "not partial_apply data: bad magic (expected \"TVMPARTL\")";
  }
  Reader header(data, sizeof(kMagic), kHeaderSize);
  Parsed out;
  out.version = header.Get<uint32_t>("version");
  if (out.version > kVersion) {
    TVM_FFI_THROW(ValueError) << "partial_apply data has format version " << out.version
                              << ", newer than this tvm-partial reads (" << kVersion
                              << "); upgrade tvm-partial";
  }
  if (out.version == 0) Corrupt("format version 0 is invalid");
  uint32_t flags = header.Get<uint32_t>("flags");
  if (flags != 0 && flags != kFlagExternalPayloads &&
      flags != (kFlagExternalPayloads | kFlagWeightsFile) &&
      flags != (kFlagExternalPayloads | kFlagAppended)) {
    Corrupt("unknown flags " + std::to_string(flags));
  }
  out.appended = (flags & kFlagAppended) != 0;
  out.external = (flags & kFlagExternalPayloads) != 0;
  out.total = header.Get<uint64_t>("total size");
  if (out.total != size) {
    Corrupt("size mismatch: the header says " + std::to_string(out.total) + " bytes, got " +
            std::to_string(size) + (size < out.total ? " (truncated)" : ""));
  }
  uint64_t meta_size = header.Get<uint64_t>("metadata size");
  if (meta_size > size - kHeaderSize) {
    Corrupt("metadata of " + std::to_string(meta_size) + " bytes runs past the end (" +
            std::to_string(size) + " bytes)");
  }
  uint64_t meta_hash = header.Get<uint64_t>("metadata hash");
  if (kVerifyChecksums && meta_hash != MetadataHash(data, meta_size)) {
    Corrupt("metadata checksum mismatch");
  }

  const size_t meta_end = kHeaderSize + meta_size;
  Reader r(data, kHeaderSize, meta_end);
  // Payloads follow the metadata in the blob, or fill a region of the library file.
  uint64_t limit = size;
  if (out.external) {
    out.symbol = r.GetStr("payload region symbol");
    out.link = r.Get<uint64_t>("payload region link");
    out.region_size = r.Get<uint64_t>("payload region size");
    if (flags & kFlagWeightsFile) {
      out.weights_file = r.GetStr("weights file name");
      if (out.weights_file.empty() || out.weights_file.find('\0') != std::string::npos) {
        Corrupt("the weights file name is empty or holds a NUL byte");
      }
    }
    if (out.symbol.rfind(kRegionSymbolPrefix, 0) != 0) {
      Corrupt("payload region symbol '" + out.symbol + "' does not start with " +
              kRegionSymbolPrefix);
    }
    if (size != meta_end) Corrupt("data after the metadata of a blob whose payloads are external");
    limit = out.region_size;
  }
  uint32_t num_functions = r.GetCount("function count", 12);
  size_t expected_offset =
      out.external ? kRegionHeaderSize : AlignUp(meta_end);  // canonical layout
  size_t payload_end = out.external ? kRegionHeaderSize : meta_end;
  std::unordered_set<std::string> seen;  // function names so far: duplicates in O(1) each
  seen.reserve(num_functions);
  out.functions.reserve(num_functions);
  for (uint32_t f = 0; f < num_functions; ++f) {
    ParsedFunction fn;
    std::string name = r.GetStr("function name");
    if (!seen.insert(name).second) Corrupt("function '" + name + "' appears twice");
    fn.name = std::move(name);
    uint32_t num_names = r.GetCount("parameter name count", 4);
    for (uint32_t i = 0; i < num_names; ++i) fn.param_names.push_back(r.GetStr("parameter name"));
    uint32_t num_bound = r.GetCount("binding count", 9);
    int64_t last_index = -1;
    for (uint32_t b = 0; b < num_bound; ++b) {
      ParsedValue v;
      v.index = r.Get<int64_t>("position");
      const std::string where =
          "function '" + std::string(fn.name) + "' position " + std::to_string(v.index);
      if (v.index <= last_index) Corrupt(where + " is negative or out of order");
      if (v.index > detail::kMaxPosition) {
        Corrupt(where + " cannot be reached: a call passes at most " +
                std::to_string(detail::kMaxCallArgs) + " arguments, so positions go up to " +
                std::to_string(detail::kMaxPosition));
      }
      last_index = v.index;
      if (num_names > 0 && v.index >= static_cast<int64_t>(num_names)) {
        Corrupt(where + " is past its " + std::to_string(num_names) + " parameters");
      }
      v.kind = r.Get<uint8_t>("value kind");
      switch (v.kind) {
        case kNone:
          v.scalar = nullptr;
          break;
        case kInt:
          v.scalar = r.Get<int64_t>("int value");
          break;
        case kFloat:
          v.scalar = r.Get<double>("float value");
          break;
        case kBool: {
          uint8_t b8 = r.Get<uint8_t>("bool value");
          if (b8 > 1) Corrupt(where + ": bool value " + std::to_string(b8));
          v.scalar = b8 == 1;
          break;
        }
        case kStr:
          v.scalar = ffi::String(r.GetStr("str value"));
          break;
        case kTensor: {
          TensorMeta& t = v.tensor;
          std::string dtype = r.GetStr("tensor dtype");
          try {
            t.dtype = ffi::StringToDLDataType(dtype);
          } catch (const ffi::Error&) {
            Corrupt(where + ": unknown dtype '" + dtype + "'");
          }
          if (std::string(ffi::DLDataTypeToString(t.dtype)) != dtype) {
            Corrupt(where + ": dtype '" + dtype + "' is not written as the writer writes it ('" +
                    std::string(ffi::DLDataTypeToString(t.dtype)) + "')");
          }
          t.device_type = r.Get<int32_t>("device type");
          t.device_id = r.Get<int32_t>("device id");
          std::string problem = TensorProblem(t.dtype, t.device_type, t.device_id);
          if (!problem.empty()) Corrupt(where + ": " + problem);
          uint32_t ndim = r.Get<uint32_t>("tensor ndim");
          if (ndim > kMaxNdim)
            Corrupt(where + ": ndim " + std::to_string(ndim) + " exceeds " +
                    std::to_string(kMaxNdim));
          for (uint32_t i = 0; i < ndim; ++i) t.shape.push_back(r.Get<int64_t>("tensor shape"));
          t.nbytes = r.Get<uint64_t>("tensor byte length");
          t.offset = r.Get<uint64_t>("tensor payload offset");
          t.hash = r.Get<uint64_t>("tensor payload hash");
          uint64_t expected_bytes = CheckedByteSize(t.shape, t.dtype, where);
          if (t.nbytes != expected_bytes) {
            Corrupt(where + ": byte length " + std::to_string(t.nbytes) +
                    " does not match its shape and dtype (" + std::to_string(expected_bytes) + ")");
          }
          if (t.offset != expected_offset) {
            Corrupt(where + ": payload offset " + std::to_string(t.offset) +
                    " is not the expected " + std::to_string(expected_offset));
          }
          if (t.offset > limit || t.nbytes > limit - t.offset) {
            Corrupt(where + ": payload of " + std::to_string(t.nbytes) + " bytes at offset " +
                    std::to_string(t.offset) + " runs past the end (" + std::to_string(limit) +
                    " bytes)");
          }
          for (size_t pad = payload_end; !out.external && pad < t.offset; ++pad) {
            if (data[pad] != 0) Corrupt("non-zero padding byte at " + std::to_string(pad));
          }
          payload_end = t.offset + t.nbytes;
          expected_offset = AlignUp(payload_end);
          break;
        }
        default:
          Corrupt(where + ": unknown value kind " + std::to_string(v.kind));
      }
      fn.values.push_back(std::move(v));
    }
    if (out.version >= 2) ReadOutputs(&r, &fn, num_names);
    out.functions.push_back(std::move(fn));
  }
  if (out.version >= 2 &&
      std::all_of(out.functions.begin(), out.functions.end(),
                  [](const ParsedFunction& fn) { return fn.outputs.empty(); })) {
    Corrupt("format version 2 without outputs (such data is written as version 1)");
  }
  if (r.left() != 0) Corrupt(std::to_string(r.left()) + " unread bytes at the end of the metadata");
  if (payload_end != limit) {
    Corrupt(std::to_string(limit - payload_end) + " bytes after the last payload");
  }
  return out;
}

// A host tensor viewing a payload region: no copy; it keeps the library that maps it loaded.
struct RegionView {
  const char* data;
  std::shared_ptr<void> keepalive;
  void AllocData(DLTensor* tensor) { tensor->data = const_cast<char*>(data); }
  void FreeData(DLTensor* tensor) { tensor->data = nullptr; }
};

/*!
 * \brief The tensor for one binding. `region` is null for payloads inside the blob (hashed and
 *        copied); otherwise the payload is in a mapped region and host tensors view it in place.
 */
ffi::Tensor Materialise(const TensorMeta& t, const char* payload, const std::string& where,
                        const region::MappedRegion* mapped) {
  if (mapped == nullptr && kVerifyChecksums && hash::Hash(payload, t.nbytes) != t.hash) {
    Corrupt(where + ": tensor payload checksum mismatch");
  }
  DLDevice device{static_cast<DLDeviceType>(t.device_type), t.device_id};
  if (t.device_type == kDLCPU && mapped != nullptr &&
      reinterpret_cast<uintptr_t>(payload) % kPayloadAlignment == 0) {
    return ffi::Tensor::FromNDAlloc(RegionView{payload, mapped->keepalive}, ffi::Shape(t.shape),
                                    t.dtype, device);
  }
  if (t.device_type == kDLCPU) {
    ffi::Tensor out = AlignedEmpty(ffi::Shape(t.shape), t.dtype, device);
    if (t.nbytes) std::memcpy(out.data_ptr(), payload, t.nbytes);
    return out;
  }
  const std::string dev = detail::DeviceString(t.device_type, t.device_id);
  auto api =
      ffi::Function::GetGlobal(std::string("device_api.") + detail::DeviceName(t.device_type));
  auto copy = ffi::Function::GetGlobal("runtime.TVMTensorCopyFromBytes");
  if (!api.has_value() || !copy.has_value()) {
    TVM_FFI_THROW(RuntimeError) << where << " was bound on device " << dev
                                << ", which this process cannot reach: no TVM runtime for "
                                << detail::DeviceName(t.device_type) << " is loaded";
  }
  auto exists = ffi::Function::GetGlobal("runtime.GetDeviceAttr");
  if (exists.has_value() && !(*exists)(t.device_type, t.device_id, 0).cast<bool>()) {
    TVM_FFI_THROW(RuntimeError) << where << " was bound on device " << dev
                                << ", which does not exist in this process";
  }
  ffi::Tensor out = AlignedEmpty(ffi::Shape(t.shape), t.dtype, device);
  (*copy)(out, const_cast<void*>(static_cast<const void*>(payload)),
          static_cast<int64_t>(t.nbytes));
  return out;
}

}  // namespace

namespace {
/*! \brief Decode with every tensor taken from the weights file `path` by its key (see
 *         `weights::ScopedWeightsFile`): the artifact's own payloads are not read, its region and
 *         recorded weights file not looked up. */
std::vector<FunctionRecord> DecodeWithWeights(Parsed& parsed, const std::string& path) {
  weights::File file = weights::Open(path);
  std::vector<weights::Wanted> wanted;
  for (const ParsedFunction& fn : parsed.functions) {
    for (const ParsedValue& v : fn.values) {
      if (v.kind != kTensor) continue;
      wanted.push_back({weights::Key(fn.name, v.index, fn.param_names),
                        ffi::DLDataTypeToString(v.tensor.dtype), v.tensor.shape});
    }
  }
  std::vector<const char*> payloads = weights::Payloads(file, wanted);
  std::vector<FunctionRecord> out;
  size_t next = 0;
  for (ParsedFunction& fn : parsed.functions) {
    FunctionRecord rec{fn.name, fn.param_names, {}};
    rec.outputs = fn.outputs;
    for (ParsedValue& v : fn.values) {
      if (v.kind == kTensor) {
        const std::string where = "tensor '" + wanted[next].key + "' of weights file " + path;
        rec.bound.emplace_back(v.index, Materialise(v.tensor, payloads[next], where, &file.data));
        ++next;
      } else {
        rec.bound.emplace_back(v.index, std::move(v.scalar));
      }
    }
    out.push_back(std::move(rec));
  }
  weights::ScopedWeightsFile::MarkUsed();
  return out;
}
}  // namespace

std::vector<FunctionRecord> Decode(const char* data, size_t size) {
  Parsed parsed = Parse(data, size);
  if (const std::string* other = weights::ScopedWeightsFile::Current()) {
    return DecodeWithWeights(parsed, *other);
  }
  region::MappedRegion mapped;
  const char* payloads = data;
  if (parsed.external) {
    auto matches = [&parsed](const char* h) {
      uint32_t version;
      uint64_t region_size, link;
      std::memcpy(&version, h + 8, 4);
      std::memcpy(&region_size, h + 16, 8);
      std::memcpy(&link, h + 24, 8);
      return std::memcmp(h, kRegionMagic, 8) == 0 && version == kVersionNoOutputs &&
             region_size == parsed.region_size && link == parsed.link;
    };
    const bool in_file = !parsed.weights_file.empty();
    // With a weights file or an appended region the library's region is its header alone (it
    // says which library this is).
    const bool header_only = in_file || parsed.appended;
    mapped = region::Find(parsed.symbol, header_only ? kRegionHeaderSize : parsed.region_size);
    if (!matches(mapped.data)) {
      Corrupt("the payload region " + parsed.symbol + " in " + mapped.library +
              " does not match its metadata (bad magic, version, size or link)");
    }
    if (parsed.appended) {
      mapped = region::MapAppended(mapped.library, parsed.region_size, parsed.link);
      if (!matches(mapped.data)) {
        Corrupt("the payload region appended to " + mapped.library +
                " does not match its metadata (bad magic, version, size or link)");
      }
    }
    if (in_file) {
      const std::string path = weights::Beside(mapped.library, parsed.weights_file);
      mapped = weights::Map(path, parsed.region_size);
      std::vector<weights::Span> spans;
      for (const ParsedFunction& fn : parsed.functions) {
        for (const ParsedValue& v : fn.values) {
          if (v.kind != kTensor) continue;
          spans.push_back(
              {v.tensor.offset, v.tensor.offset + v.tensor.nbytes,
               "function '" + std::string(fn.name) + "' position " + std::to_string(v.index)});
        }
      }
      weights::CheckHeader(path, spans);
      if (!matches(mapped.data)) {
        TVM_FFI_THROW(ValueError)
            << "weights file " << path << " was not written with this artifact "
            << "(its region header does not match the metadata): export again, "
            << "or load(path, weights_file=...) to bind other weights";
      }
    }
    payloads = mapped.data;
  }
  std::vector<FunctionRecord> out;
  for (ParsedFunction& fn : parsed.functions) {
    FunctionRecord rec{fn.name, fn.param_names, {}};
    rec.outputs = fn.outputs;
    for (ParsedValue& v : fn.values) {
      if (v.kind == kTensor) {
        std::string where =
            "function '" + std::string(fn.name) + "' position " + std::to_string(v.index);
        rec.bound.emplace_back(v.index, Materialise(v.tensor, payloads + v.tensor.offset, where,
                                                    parsed.external ? &mapped : nullptr));
      } else {
        rec.bound.emplace_back(v.index, std::move(v.scalar));
      }
    }
    out.push_back(std::move(rec));
  }
  return out;
}

ffi::Map<ffi::String, ffi::Any> Describe(const char* data, size_t size) {
  static const char* kKindNames[] = {"None", "int", "float", "bool", "str", "tensor"};
  Parsed parsed = Parse(data, size);
  ffi::Array<ffi::Any> functions;
  uint64_t constant_bytes = 0;
  for (const ParsedFunction& fn : parsed.functions) {
    ffi::Array<ffi::Any> bindings;
    for (const ParsedValue& v : fn.values) {
      ffi::Map<ffi::String, ffi::Any> b;
      b.Set("index", v.index);
      b.Set("kind", ffi::String(kKindNames[v.kind]));
      if (v.kind == kTensor) {
        b.Set("dtype", ffi::DLDataTypeToString(v.tensor.dtype));
        b.Set("shape", ffi::Array<int64_t>(v.tensor.shape.begin(), v.tensor.shape.end()));
        b.Set("device",
              ffi::String(detail::DeviceString(v.tensor.device_type, v.tensor.device_id)));
        b.Set("bytes", static_cast<int64_t>(v.tensor.nbytes));
        // Where the payload is (from the blob's start, or the region's) and its recorded hash.
        b.Set("offset", static_cast<int64_t>(v.tensor.offset));
        b.Set("hash", static_cast<int64_t>(v.tensor.hash));
        constant_bytes += v.tensor.nbytes;
      } else {
        b.Set("value", v.scalar);
      }
      bindings.push_back(b);
    }
    ffi::Map<ffi::String, ffi::Any> f;
    f.Set("name", fn.name);
    f.Set("param_names", fn.param_names);
    f.Set("bindings", bindings);
    f.Set("outputs", detail::OutputsToAny(fn.outputs));
    functions.push_back(f);
  }
  ffi::Map<ffi::String, ffi::Any> out;
  out.Set("version", static_cast<int64_t>(parsed.version));
  out.Set("total_bytes", static_cast<int64_t>(parsed.total));
  out.Set("constant_bytes", static_cast<int64_t>(constant_bytes));
  out.Set("payloads", ffi::String(parsed.external ? "region " + parsed.symbol : "inline"));
  if (!parsed.weights_file.empty()) out.Set("weights_file", ffi::String(parsed.weights_file));
  if (parsed.appended) out.Set("region_appended", true);
  if (parsed.external) {
    out.Set("region_link", static_cast<int64_t>(parsed.link));
    out.Set("region_size", static_cast<int64_t>(parsed.region_size));
  }
  out.Set("functions", functions);
  return out;
}

}  // namespace format
}  // namespace tvm_partial
