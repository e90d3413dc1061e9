// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file compiled_in.cc
 * \brief Tensors a frontend compiled into a Relax executable: their records, how they are
 *        written and read, and the one rule a value given for one must meet (compiled_in.h).
 */
#include "compiled_in.h"

#include <tvm/ffi/container/shape.h>
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>

#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "format/common.h"
#include "format/format.h"
#include "format/hash.h"
#include "registry.h"

namespace tvm_partial {

namespace {

constexpr uint32_t kMaxNdim = 64;

std::string Text(DLDataType dtype, const std::vector<int64_t>& shape) {
  std::ostringstream os;
  os << ffi::DLDataTypeToString(dtype) << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << "]";
  return os.str();
}

void PutU32(uint32_t v, std::string* out) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutU64(uint64_t v, std::string* out) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutStr(const std::string& s, std::string* out) {
  PutU32(static_cast<uint32_t>(s.size()), out);
  out->append(s);
}

/*! \brief Bounds-checked little-endian reads of a record. */
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

/*! \brief TVM's tensor record (runtime::SaveDLTensor): this magic, then u64 reserved, i32 device
 *         type, i32 device id, i32 ndim, u8 code, u8 bits, u16 lanes, i64 shape[ndim], i64 byte
 *         size, the bytes. */
constexpr uint64_t kTensorMagic = 0xDD5E40F096B4A13FULL;

/*! \brief (dtype code, bits, lanes, byte size, hash) of each tensor record in `data`. */
std::set<std::tuple<int, int, int, uint64_t, uint64_t>> TensorRecords(const char* data,
                                                                      size_t size) {
  std::set<std::tuple<int, int, int, uint64_t, uint64_t>> out;
  auto u32 = [&](size_t at) {
    uint32_t v;
    std::memcpy(&v, data + at, 4);
    return v;
  };
  auto u64 = [&](size_t at) {
    uint64_t v;
    std::memcpy(&v, data + at, 8);
    return v;
  };
  for (size_t at = 0; at + 32 <= size; ++at) {
    if (u64(at) != kTensorMagic) continue;
    const uint32_t ndim = u32(at + 24);
    if (ndim > kMaxNdim || at + 32 + 8ull * ndim + 8 > size) continue;
    const auto* dtype = reinterpret_cast<const unsigned char*>(data + at + 28);
    const uint64_t nbytes = u64(at + 32 + 8ull * ndim);
    const size_t begin = at + 40 + 8 * static_cast<size_t>(ndim);
    if (nbytes > size - begin) continue;
    out.emplace(dtype[0], dtype[1], dtype[2] | (dtype[3] << 8), nbytes,
                hash::Hash(data + begin, static_cast<size_t>(nbytes)));
  }
  return out;
}

}  // namespace

bool ExecutableHolds(const ffi::Module& executable, const CompiledIn& compiled) {
  const ffi::Bytes bytes = executable->SaveToBytes();
  uint64_t nbytes = 0;
  format::ShapeProblem(compiled.shape.data(), compiled.shape.size(), compiled.dtype, &nbytes);
  return TensorRecords(bytes.data(), bytes.size())
      .count(
          {compiled.dtype.code, compiled.dtype.bits, compiled.dtype.lanes, nbytes, compiled.hash});
}

CompiledIn RecordCompiledIn(const std::string& name, const ffi::Tensor& tensor) {
  if (!tensor.IsContiguous()) {
    TVM_FFI_THROW(ValueError) << "the compiled-in tensor '" << name << "' is not contiguous";
  }
  const DLTensor& t = *tensor.GetDLTensorPtr();
  const uint64_t nbytes = format::PayloadBytes(t);
  const format::HostBytes host(tensor, static_cast<size_t>(nbytes));
  return CompiledIn{name, t.dtype, std::vector<int64_t>(t.shape, t.shape + t.ndim),
                    hash::Hash(host.data(), static_cast<size_t>(nbytes))};
}

std::string CompiledInProblem(const CompiledIn& compiled, DLDataType dtype,
                              const std::vector<int64_t>& shape, uint64_t hash) {
  if (compiled.unused) return "";
  const bool same_type = dtype.code == compiled.dtype.code && dtype.bits == compiled.dtype.bits &&
                         dtype.lanes == compiled.dtype.lanes && shape == compiled.shape;
  if (same_type && hash == compiled.hash) return "";
  std::ostringstream os;
  os << "the frontend compiled it into the code (" << Text(compiled.dtype, compiled.shape)
     << "), so a value given for it cannot reach the model: ";
  if (!same_type) {
    os << "this one is " << Text(dtype, shape);
  } else {
    os << "this one differs from the compiled one";
  }
  os << ". Give the compiled value (or leave it out), or keep it swappable: make it a "
     << "parameter of the model (an nn.Parameter, an ONNX graph input, "
     << "from_onnx(..., keep_params_in_input=True)), or import and compile the model again with "
     << "this value";
  return os.str();
}

void WriteCompiledIn(const std::vector<CompiledIn>& records, std::string* out) {
  PutU32(static_cast<uint32_t>(records.size()), out);
  for (const CompiledIn& c : records) {
    PutStr(c.name, out);
    PutStr(std::string(ffi::DLDataTypeToString(c.dtype)), out);
    PutU32(static_cast<uint32_t>(c.shape.size()), out);
    for (int64_t d : c.shape) PutU64(static_cast<uint64_t>(d), out);
    PutU64(c.hash, out);
    out->push_back(static_cast<char>(c.unused ? 1 : 0));
  }
}

std::vector<CompiledIn> ReadCompiledIn(const unsigned char* data, size_t size, size_t* at,
                                       const char* who) {
  Cursor r{data, size, at, who};
  const uint64_t count = r.Get(4, "count");
  // Each record takes at least 4 + 4 + 4 + 8 + 1 bytes: a count that cannot fit is refused before
  // anything is reserved.
  if (count * 21 > size - *at) {
    TVM_FFI_THROW(ValueError) << who << ": " << count << " compiled-in records cannot fit in "
                              << (size - *at) << " bytes";
  }
  std::vector<CompiledIn> out;
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
    if (ndim > kMaxNdim) {
      TVM_FFI_THROW(ValueError) << who << ": compiled-in '" << c.name << "' has " << ndim
                                << " dimensions (at most " << kMaxNdim << ")";
    }
    for (uint64_t d = 0; d < ndim; ++d) {
      c.shape.push_back(static_cast<int64_t>(r.Get(8, "shape")));
    }
    uint64_t bytes = 0;
    const std::string problem =
        format::ShapeProblem(c.shape.data(), c.shape.size(), c.dtype, &bytes);
    if (!problem.empty()) {
      TVM_FFI_THROW(ValueError) << who << ": compiled-in '" << c.name << "': " << problem;
    }
    c.hash = r.Get(8, "hash");
    const uint64_t unused = r.Get(1, "unused flag");
    if (unused > 1) {
      TVM_FFI_THROW(ValueError) << who << ": compiled-in '" << c.name << "' has flag " << unused;
    }
    c.unused = unused == 1;
    out.push_back(std::move(c));
  }
  return out;
}

TVM_FFI_STATIC_INIT_BLOCK() {
  // Whether `executable` holds `tensor` as one of its constants (ExecutableHolds): what binding
  // asks of each value a program says its frontend compiled in, before trusting the program.
  detail::RegisterGlobalOnce("tvm_partial.ExecutableHolds",
                             [](ffi::Module executable, ffi::Tensor tensor) {
                               return ExecutableHolds(executable, RecordCompiledIn("", tensor));
                             });
  // Why `given` cannot be bound for `name`, which the frontend compiled into the code as
  // `compiled`; "" when it can (it is the compiled value). Binding asks this of every value given
  // for a compiled-in name, as the loader asks CompiledInProblem of a weights file's.
  detail::RegisterGlobalOnce(
      "tvm_partial.CompiledInProblem",
      [](ffi::String name, ffi::Tensor compiled, ffi::Tensor given) {
        const CompiledIn theirs = RecordCompiledIn(name, given);
        return ffi::String(CompiledInProblem(RecordCompiledIn(name, compiled), theirs.dtype,
                                             theirs.shape, theirs.hash));
      });
}

}  // namespace tvm_partial
