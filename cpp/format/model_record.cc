// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file format/model_record.cc
 * \brief Model records (model_record.h): written, read, and the rule a given value must meet.
 */
#include "format/model_record.h"

#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>
#include <tvm_partial/partial_apply.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "format/common.h"
#include "format/format.h"
#include "format/hash.h"

namespace tvm_partial {

namespace {

// The low `bytes` bytes of `v`, little-endian.
void Put(uint64_t v, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutStr(const std::string& s, std::string* out) {
  Put(s.size(), 4, out);
  out->append(s);
}

struct Cursor {
  const unsigned char* data;
  size_t size;
  size_t* at;
  const char* who;

  void Need(size_t n, const char* what) const {
    if (n > size - *at) {
      TVM_FFI_THROW(ValueError) << who << ": truncated compiled-in record (" << what << " needs "
                                << n << " bytes at byte " << *at << ", " << (size - *at)
                                << " left)";
    }
  }
  uint64_t Get(int bytes, const char* what) {
    Need(static_cast<size_t>(bytes), what);
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(data[*at + i]) << (8 * i);
    *at += static_cast<size_t>(bytes);
    return v;
  }
  std::string Str(const char* what) {
    const uint64_t n = Get(4, what);
    Need(static_cast<size_t>(n), what);
    std::string s(reinterpret_cast<const char*>(data + *at), static_cast<size_t>(n));
    *at += static_cast<size_t>(n);
    if (!format::IsValidUtf8(s.data(), s.size())) {
      TVM_FFI_THROW(ValueError) << who << ": a compiled-in " << what << " is not UTF-8";
    }
    return s;
  }
};

// A given value's record: a tensor's (a contiguous host copy where it is not one).
CompiledIn RecordGiven(const std::string& name, const ffi::Any& value) {
  auto tensor = value.try_cast<ffi::Tensor>();
  if (!tensor.has_value()) {
    TVM_FFI_THROW(TypeError) << "cannot bind '" << name << "': the code holds a tensor for it, got "
                             << value.GetTypeKey();
  }
  return RecordCompiledIn(name, *tensor);
}

// Whether two tensors view the very same memory, alike.
bool SameMemory(const ffi::Any& value, const ffi::Tensor& source) {
  auto tensor = value.try_cast<ffi::Tensor>();
  if (!tensor.has_value()) return false;
  const DLTensor& a = *tensor->GetDLTensorPtr();
  const DLTensor& b = *source.GetDLTensorPtr();
  return a.data == b.data && a.byte_offset == b.byte_offset && a.ndim == b.ndim &&
         a.dtype == b.dtype && a.device.device_type == b.device.device_type &&
         a.device.device_id == b.device.device_id && tensor->IsContiguous() &&
         source.IsContiguous() && std::equal(a.shape, a.shape + a.ndim, b.shape);
}

bool SameRecord(const CompiledIn& a, const CompiledIn& b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.hash == b.hash;
}

}  // namespace

// TVM's tensor record (runtime::SaveDLTensor, LE): magic 0xDD5E40F096B4A13F, u64 reserved, i32
// device type, id and ndim, u8 code, u8 bits, u16 lanes, i64 shape[ndim], i64 nbytes, the bytes.
bool BytesHoldTensor(const ffi::Bytes& executable_bytes, const std::vector<CompiledIn>& wanted,
                     std::string* missing) {
  using Key = std::tuple<int, int, int, uint64_t>;  // dtype code, bits, lanes, byte size
  std::map<Key, std::vector<const CompiledIn*>> pending;
  for (const CompiledIn& c : wanted) {
    uint64_t nbytes = 0;
    format::ShapeProblem(c.shape.data(), c.shape.size(), c.dtype, &nbytes);
    pending[{c.dtype.code, c.dtype.bits, c.dtype.lanes, nbytes}].push_back(&c);
  }
  const char* data = executable_bytes.data();
  const size_t size = executable_bytes.size();
  auto u64 = [data](size_t at) {
    uint64_t v;
    std::memcpy(&v, data + at, 8);
    return v;
  };
  const std::string_view bytes(data, size);
  const std::string_view magic("\x3F\xA1\xB4\x96\xF0\x40\x5E\xDD", 8);
  // Skip each record whole (a payload may hold the magic); hash only a wanted dtype and size.
  for (size_t at = 0; !pending.empty();) {
    at = bytes.find(magic, at);
    if (at == std::string_view::npos || size - at < 40) break;
    uint32_t ndim;
    std::memcpy(&ndim, data + at + 24, 4);
    const size_t begin = at + 40 + 8 * static_cast<size_t>(ndim);
    if (ndim > format::kMaxNdim || begin > size || u64(begin - 8) > size - begin) {
      at += 1;
      continue;
    }
    const uint64_t nbytes = u64(begin - 8);
    const auto* dtype = reinterpret_cast<const unsigned char*>(data + at + 28);
    auto it = pending.find(Key{dtype[0], dtype[1], dtype[2] | (dtype[3] << 8), nbytes});
    if (it != pending.end()) {
      const uint64_t hash = hash::Hash(data + begin, static_cast<size_t>(nbytes));
      auto& list = it->second;
      list.erase(std::remove_if(list.begin(), list.end(),
                                [hash](const CompiledIn* c) { return c->hash == hash; }),
                 list.end());
      if (list.empty()) pending.erase(it);
    }
    at = begin + static_cast<size_t>(nbytes);
  }
  if (pending.empty()) return true;
  *missing = pending.begin()->second.front()->name;
  return false;
}

CompiledIn RecordCompiledIn(const std::string& name, const ffi::Tensor& tensor) {
  if (!tensor.IsContiguous()) return RecordCompiledIn(name, AlignedCopy(tensor, {kDLCPU, 0}));
  const DLTensor& t = *tensor.GetDLTensorPtr();
  const size_t nbytes = static_cast<size_t>(format::PayloadBytes(t));
  return CompiledIn{name, t.dtype, std::vector<int64_t>(t.shape, t.shape + t.ndim),
                    format::StoredHash(tensor, nbytes, nullptr)};
}

const CompiledIn* ModelRecord::Find(const std::string& name) const {
  for (const CompiledIn& c : compiled_in) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

const std::vector<std::string>* ModelRecord::TieOf(const std::string& name) const {
  for (const std::vector<std::string>& group : ties) {
    if (std::find(group.begin(), group.end(), name) != group.end()) return &group;
  }
  return nullptr;
}

std::string CompiledInProblem(const CompiledIn& compiled, DLDataType dtype,
                              const std::vector<int64_t>& shape, uint64_t hash) {
  if (compiled.kind == CompiledIn::kUnused) return "";
  const bool same_type = dtype == compiled.dtype && shape == compiled.shape;
  if (same_type && hash == compiled.hash) return "";
  const bool read = compiled.kind == CompiledIn::kRead || compiled.kind == CompiledIn::kPinned;
  std::ostringstream os;
  os << "the frontend " << (read ? "read its value at import and folded it" : "compiled it")
     << " into the code (" << compiled.dtype << format::Dims(compiled.shape)
     << "), so a value given for it cannot reach the model: ";
  if (!same_type) {
    os << "this one is " << dtype << format::Dims(shape);
  } else {
    os << "this one differs from the compiled one";
  }
  os << ". Give the compiled value"
     << (compiled.kind == CompiledIn::kPinned ? "" : " (or leave it out)");
  if (read) {
    os << ", or import and compile the model again with this value";
  } else {
    os << ", or keep it swappable: import the model with tvm_partial.from_exported_program or "
          "tvm_partial.from_onnx, which make every tensor of its state a parameter";
  }
  return os.str();
}

ffi::Map<ffi::String, ffi::String> SettleNames(const ModelRecord& record,
                                               const std::vector<std::string>& params,
                                               const ffi::Map<ffi::String, ffi::Any>& given,
                                               const ffi::Map<ffi::String, ffi::Tensor>& sources) {
  ffi::Map<ffi::String, ffi::String> out;
  for (const auto& [name, value] : given) {
    const CompiledIn* c = record.Find(name);
    auto source = sources.Get(name);
    if (c != nullptr && c->kind != CompiledIn::kUnused &&
        !(source.has_value() && SameMemory(value, *source))) {
      const CompiledIn theirs = RecordGiven(name, value);
      const std::string problem = CompiledInProblem(*c, theirs.dtype, theirs.shape, theirs.hash);
      if (!problem.empty())
        TVM_FFI_THROW(ValueError) << "cannot bind '" << name << "': " << problem;
    }
    if (c == nullptr || c->kind == CompiledIn::kPinned) out.Set(name, name);
  }
  for (const std::vector<std::string>& group : record.ties) {
    std::vector<std::string> named;  // the group's names given, in the model's order
    for (const std::string& n : group) {
      if (out.count(n)) named.push_back(n);
    }
    if (named.empty()) continue;
    const ffi::Any& first = given.at(named[0]);
    for (size_t i = 1; i < named.size(); ++i) {
      const ffi::Any& other = given.at(named[i]);
      if (!other.same_as(first) &&
          !SameRecord(RecordGiven(named[0], first), RecordGiven(named[i], other))) {
        TVM_FFI_THROW(ValueError)
            << "'" << named[0] << "' and '" << named[i] << "' are one tensor in " << record.what
            << " (tied weights), but the values given for them differ: give one of the names (it "
               "binds both), or the same tensor under each";
      }
    }
    for (const std::string& n : group) {
      if (std::find(params.begin(), params.end(), n) != params.end()) {
        out.Set(n, named[0]);
      } else {
        out.erase(n);
      }
    }
  }
  return out;
}

void WriteModelRecord(const ModelRecord& record, std::string* out) {
  PutStr(record.what, out);
  Put(record.compiled_in.size(), 4, out);
  for (const CompiledIn& c : record.compiled_in) {
    PutStr(c.name, out);
    PutStr(std::string(ffi::DLDataTypeToString(c.dtype)), out);
    Put(c.shape.size(), 4, out);
    for (int64_t d : c.shape) Put(static_cast<uint64_t>(d), 8, out);
    Put(c.hash, 8, out);
    Put(c.kind, 1, out);
  }
  Put(record.ties.size(), 4, out);
  for (const std::vector<std::string>& group : record.ties) {
    Put(group.size(), 4, out);
    for (const std::string& n : group) PutStr(n, out);
  }
}

ModelRecord ReadModelRecord(const unsigned char* data, size_t size, size_t* at, const char* who) {
  Cursor r{data, size, at, who};
  ModelRecord record;
  record.what = r.Str("description");
  const uint64_t count = r.Get(4, "count");
  // Each record takes at least 4 + 4 + 4 + 8 + 1 bytes: refuse a count that cannot fit.
  if (count * 21 > size - *at) {
    TVM_FFI_THROW(ValueError) << who << ": " << count << " compiled-in records cannot fit in "
                              << (size - *at) << " bytes";
  }
  std::set<std::string> names;
  for (uint64_t k = 0; k < count; ++k) {
    CompiledIn c;
    c.name = r.Str("name");
    if (c.name.empty() || !names.insert(c.name).second) {
      TVM_FFI_THROW(ValueError) << who << ": compiled-in name '" << c.name
                                << "' is empty or appears twice";
    }
    const std::string dtype = r.Str("dtype");
    try {
      c.dtype = ffi::StringToDLDataType(dtype);
    } catch (const ffi::Error&) {
      TVM_FFI_THROW(ValueError) << who << ": compiled-in '" << c.name << "' has unknown dtype '"
                                << dtype << "'";
    }
    const uint64_t ndim = r.Get(4, "ndim");
    if (ndim > format::kMaxNdim) {
      TVM_FFI_THROW(ValueError) << who << ": compiled-in '" << c.name << "' has " << ndim
                                << " dimensions (at most " << format::kMaxNdim << ")";
    }
    for (uint64_t d = 0; d < ndim; ++d) c.shape.push_back(static_cast<int64_t>(r.Get(8, "shape")));
    uint64_t bytes = 0;
    const std::string problem =
        format::ShapeProblem(c.shape.data(), c.shape.size(), c.dtype, &bytes);
    if (!problem.empty()) {
      TVM_FFI_THROW(ValueError) << who << ": compiled-in '" << c.name << "': " << problem;
    }
    c.hash = r.Get(8, "hash");
    const uint64_t kind = r.Get(1, "kind");
    if (kind > CompiledIn::kRead) {
      TVM_FFI_THROW(ValueError) << who << ": compiled-in '" << c.name << "' has kind " << kind;
    }
    c.kind = static_cast<CompiledIn::Kind>(kind);
    record.compiled_in.push_back(std::move(c));
  }
  const uint64_t groups = r.Get(4, "tie count");
  if (groups * 4 > size - *at) {
    TVM_FFI_THROW(ValueError) << who << ": " << groups << " ties cannot fit in " << (size - *at)
                              << " bytes";
  }
  std::set<std::string> tied;
  for (uint64_t g = 0; g < groups; ++g) {
    const uint64_t n = r.Get(4, "tie size");
    if (n < 2 || n * 4 > size - *at) {
      TVM_FFI_THROW(ValueError) << who << ": a tie of " << n << " names";
    }
    std::vector<std::string> group;
    for (uint64_t k = 0; k < n; ++k) {
      group.push_back(r.Str("tied name"));
      if (group.back().empty() || !tied.insert(group.back()).second) {
        TVM_FFI_THROW(ValueError) << who << ": tied name '" << group.back()
                                  << "' is empty or appears twice";
      }
    }
    record.ties.push_back(std::move(group));
  }
  return record;
}

}  // namespace tvm_partial
