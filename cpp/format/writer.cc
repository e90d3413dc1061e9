// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file format/writer.cc
 * \brief The format's writer (format.h): the blob, and an external payload region's header.
 */
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "format/common.h"
#include "format/format.h"
#include "format/hash.h"

namespace tvm_partial {
namespace format {

namespace {

class Writer {
 public:
  template <typename T>
  void Put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    buf_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void PutStr(const std::string& s) {
    if (s.size() > UINT32_MAX) {
      TVM_FFI_THROW(ValueError) << "cannot save a string of " << s.size()
                                << " bytes: the format holds strings of at most " << UINT32_MAX;
    }
    Put<uint32_t>(static_cast<uint32_t>(s.size()));
    buf_.append(s);
  }
  template <typename T>
  void Patch(size_t at, T v) {
    std::memcpy(&buf_[at], &v, sizeof(T));
  }
  size_t size() const { return buf_.size(); }
  std::string& str() { return buf_; }

 private:
  std::string buf_;
};

void WriteOutputs(Writer* w, const Outputs& outputs) {
  w->Put<uint32_t>(static_cast<uint32_t>(outputs.size()));
  for (const Output& o : outputs) {
    w->Put<int64_t>(o.position);
    w->PutStr(ffi::DLDataTypeToString(o.dtype));
    w->Put<uint32_t>(static_cast<uint32_t>(o.shape.size()));
    for (const OutputDim& dim : o.shape) {
      w->Put<int64_t>(dim.arg < 0 ? -1 : dim.arg);
      w->Put<int64_t>(dim.value);
    }
  }
}

// A sharded tensor must be bound in one place: other places would not see a rank's view replace it.
void CheckShardsUntied(const std::vector<FunctionRecord>& functions,
                       const std::vector<std::vector<int64_t>>& numbers) {
  std::map<int64_t, int> places;
  for (const std::vector<int64_t>& fn : numbers) {
    for (int64_t n : fn) ++places[n];
  }
  for (size_t f = 0; f < functions.size(); ++f) {
    for (const Shard& shard : functions[f].shards) {
      for (size_t b = 0; b < functions[f].bound.size(); ++b) {
        if (functions[f].bound[b].first != shard.position || places[numbers[f][b]] < 2) continue;
        TVM_FFI_THROW(ValueError)
            << "cannot save function '" << functions[f].name << "' position " << shard.position
            << ": it is split into shards and the same tensor is bound in another place too; "
            << "bind a copy of it there (a rank's shard cannot stand for the whole tensor)";
      }
    }
  }
}

/*! \brief The shard record of `fn` at `position` when it stores the tensor shard-major. */
const Shard* StoredShard(const FunctionRecord& fn, int64_t position) {
  for (const Shard& s : fn.shards) {
    if (s.position == position && s.layout == kShardMajor) return &s;
  }
  return nullptr;
}

/*! \brief The shards of one function (checked at bind), each with every rank's range's hash. */
void WriteShards(Writer* w, const FunctionRecord& fn) {
  w->Put<uint32_t>(static_cast<uint32_t>(fn.shards.size()));
  for (const Shard& s : fn.shards) {
    w->Put<int64_t>(s.position);
    w->Put<uint32_t>(static_cast<uint32_t>(s.dim));
    w->Put<uint32_t>(static_cast<uint32_t>(s.world));
    w->Put<uint8_t>(s.layout);
    if (s.layout == kShardMajor) w->Put<uint32_t>(static_cast<uint32_t>(s.segments));
    const auto bound = std::find_if(fn.bound.begin(), fn.bound.end(),
                                    [&](const auto& b) { return b.first == s.position; });
    if (bound == fn.bound.end() || bound->second.type_index() != ffi::TypeIndex::kTVMFFITensor) {
      TVM_FFI_THROW(InternalError) << "cannot save function '" << fn.name << "': its shard at "
                                   << "position " << s.position << " binds no tensor";
    }
    const ffi::Tensor tensor = bound->second.cast<ffi::Tensor>();
    const size_t nbytes = static_cast<size_t>(PayloadBytes(*tensor.GetDLTensorPtr()));
    const size_t per_rank = nbytes / static_cast<size_t>(s.world);
    // Each rank's range of the payload as stored: one piece, or shard-major one piece per rank.
    ForEachStoredPiece(tensor, nbytes, &s, [&](const char* data, size_t n) {
      for (size_t at = 0; at < n; at += per_rank) {
        w->Put<uint64_t>(hash::Hash(data + at, std::min(per_rank, n - at)));
      }
    });
    for (int64_t r = 0; per_rank == 0 && r < s.world; ++r) w->Put<uint64_t>(hash::Hash(nullptr, 0));
  }
}

}  // namespace

std::string Encode(const std::vector<FunctionRecord>& functions, const ExternalRegion* region) {
  struct Pending {
    ffi::Tensor tensor;
    size_t nbytes;
    size_t patch_at;     // where the payload offset is patched in, its hash 8 bytes later
    const Shard* shard;  // stored shard-major, or null
  };
  std::vector<Pending> tensors;
  const std::vector<std::vector<int64_t>> numbers = TensorNumbers(functions);
  CheckShardsUntied(functions, numbers);
  Writer w;
  w.str().append(kMagic, sizeof(kMagic));
  w.Put<uint32_t>(kVersion);
  w.Put<uint32_t>(region ? (kFlagExternalPayloads |
                            (region->weights_file.empty() ? 0 : kFlagWeightsFile) |
                            (region->appended ? kFlagAppended : 0))
                         : 0);
  w.Put<uint64_t>(0);  // total size, patched
  w.Put<uint64_t>(0);  // metadata size, patched
  w.Put<uint64_t>(0);  // metadata hash, patched
  size_t region_size_at = 0;
  if (region) {
    w.PutStr(region->symbol);
    w.Put<uint64_t>(region->link);
    region_size_at = w.size();
    w.Put<uint64_t>(0);  // region size, patched
    if (!region->weights_file.empty()) w.PutStr(region->weights_file);
  }

  // The reader refuses text that is not UTF-8: so does the writer.
  auto utf8 = [](const FunctionRecord& fn, const ffi::String& text, const char* what) {
    if (!IsValidUtf8(text.data(), text.size())) {
      TVM_FFI_THROW(ValueError) << "cannot save function '" << fn.name << "': its " << what
                                << " is not valid UTF-8";
    }
  };
  w.Put<uint32_t>(static_cast<uint32_t>(functions.size()));
  for (size_t f = 0; f < functions.size(); ++f) {
    const FunctionRecord& fn = functions[f];
    if (!IsValidUtf8(fn.name.data(), fn.name.size())) {
      TVM_FFI_THROW(ValueError) << "cannot save a function whose name is not valid UTF-8";
    }
    w.PutStr(fn.name);
    w.Put<uint32_t>(static_cast<uint32_t>(fn.param_names.size()));
    for (const ffi::String& p : fn.param_names) {
      utf8(fn, p, "parameter name");
      w.PutStr(p);
    }
    w.Put<uint32_t>(static_cast<uint32_t>(fn.bound.size()));
    for (size_t b = 0; b < fn.bound.size(); ++b) {
      const auto& [index, value] = fn.bound[b];
      w.Put<int64_t>(index);
      const int64_t number = numbers[f][b];
      if (number >= 0 && static_cast<size_t>(number) < tensors.size()) {
        w.Put<uint8_t>(kSharedTensor);  // the tensor of an earlier binding: its payload once
        w.Put<uint64_t>(static_cast<uint64_t>(number));
        continue;
      }
      switch (value.type_index()) {
        case ffi::TypeIndex::kTVMFFINone:
          w.Put<uint8_t>(kNone);
          break;
        case ffi::TypeIndex::kTVMFFIInt:
          w.Put<uint8_t>(kInt);
          w.Put<int64_t>(value.cast<int64_t>());
          break;
        case ffi::TypeIndex::kTVMFFIFloat:
          w.Put<uint8_t>(kFloat);
          w.Put<double>(value.cast<double>());
          break;
        case ffi::TypeIndex::kTVMFFIBool:
          w.Put<uint8_t>(kBool);
          w.Put<uint8_t>(value.cast<bool>() ? 1 : 0);
          break;
        case ffi::TypeIndex::kTVMFFIStr:
        case ffi::TypeIndex::kTVMFFISmallStr:
          w.Put<uint8_t>(kStr);
          utf8(fn, value.cast<ffi::String>(), "bound string");
          w.PutStr(value.cast<ffi::String>());
          break;
        case ffi::TypeIndex::kTVMFFITensor: {
          ffi::Tensor tensor = value.cast<ffi::Tensor>();
          const DLTensor* t = tensor.GetDLTensorPtr();
          if (!tensor.IsContiguous()) {
            TVM_FFI_THROW(ValueError) << "cannot save function '" << fn.name << "' position "
                                      << index << ": the bound tensor is not contiguous";
          }
          std::string problem = TensorProblem(t->dtype, t->device.device_type, t->device.device_id);
          uint64_t shape_bytes = 0;
          if (problem.empty()) problem = ShapeProblem(t->shape, t->ndim, t->dtype, &shape_bytes);
          if (!problem.empty()) {
            TVM_FFI_THROW(ValueError)
                << "cannot save function '" << fn.name << "' position " << index << ": " << problem;
          }
          w.Put<uint8_t>(kTensor);
          w.PutStr(ffi::DLDataTypeToString(t->dtype));
          w.Put<int32_t>(t->device.device_type);
          w.Put<int32_t>(t->device.device_id);
          w.Put<uint32_t>(static_cast<uint32_t>(t->ndim));
          for (int i = 0; i < t->ndim; ++i) w.Put<int64_t>(t->shape[i]);
          const size_t nbytes = static_cast<size_t>(shape_bytes);
          w.Put<uint64_t>(nbytes);
          tensors.push_back({tensor, nbytes, w.size(), StoredShard(fn, index)});
          w.Put<uint64_t>(0);  // offset, patched
          w.Put<uint64_t>(0);  // hash, patched
          break;
        }
        default:
          TVM_FFI_THROW(TypeError)
              << "cannot save function '" << fn.name << "' position " << index << ": a bound "
              << value.GetTypeKey()
              << " cannot be serialised (only tensors, int, float, bool, str and None can)";
      }
    }
    WriteOutputs(&w, fn.outputs);
    WriteShards(&w, fn);
  }
  const size_t meta_size = w.size() - kHeaderSize;
  if (region) {
    // Offsets from the region's start; WriteRegion writes the payloads.
    size_t end = kRegionHeaderSize;
    if (region->hashes_given && !region->hashes.empty() &&
        region->hashes.size() != tensors.size()) {
      TVM_FFI_THROW(ValueError) << "payload hashes: " << region->hashes.size() << " given for "
                                << tensors.size() << " tensors";
    }
    for (size_t k = 0; k < tensors.size(); ++k) {
      Pending& p = tensors[k];
      size_t offset = AlignUp(end);
      w.Patch<uint64_t>(p.patch_at, offset);
      w.Patch<uint64_t>(p.patch_at + 8, !region->hashes_given
                                            ? StoredHash(p.tensor, p.nbytes, p.shard)
                                        : region->hashes.empty() ? 0
                                                                 : region->hashes[k]);
      end = offset + p.nbytes;
    }
    w.Patch<uint64_t>(region_size_at, end);
  } else {  // payloads follow the metadata, each at the next multiple of 64
    for (Pending& p : tensors) {
      size_t offset = AlignUp(w.size());
      w.str().resize(offset, '\0');
      w.str().resize(offset + p.nbytes);
      if (p.shard != nullptr) {
        size_t at = offset;
        ForEachStoredPiece(p.tensor, p.nbytes, p.shard, [&](const char* d, size_t n) {
          std::memcpy(&w.str()[at], d, n);
          at += n;
        });
      } else {
        CopyTensorToHost(p.tensor, &w.str()[offset], p.nbytes);
      }
      w.Patch<uint64_t>(p.patch_at, offset);
      w.Patch<uint64_t>(p.patch_at + 8, hash::Hash(w.str().data() + offset, p.nbytes));
    }
  }
  w.Patch<uint64_t>(16, w.size());
  w.Patch<uint64_t>(24, meta_size);
  w.Patch<uint64_t>(32, MetadataHash(w.str().data(), meta_size));
  return std::move(w.str());
}

namespace {

// TensorNumbers' key; null data is keyed by the object (empty tensors match only themselves).
using TensorIdentity = std::tuple<const void*, const void*, uint64_t, int32_t, int32_t, uint8_t,
                                  uint8_t, uint16_t, std::vector<int64_t>, std::vector<int64_t>>;

TensorIdentity IdentityOf(const ffi::Tensor& tensor) {
  const DLTensor* t = tensor.GetDLTensorPtr();
  std::vector<int64_t> strides;
  if (t->strides != nullptr && !tensor.IsContiguous())
    strides.assign(t->strides, t->strides + t->ndim);
  return TensorIdentity(t->data == nullptr ? static_cast<const void*>(t) : nullptr, t->data,
                        t->byte_offset, t->device.device_type, t->device.device_id, t->dtype.code,
                        t->dtype.bits, t->dtype.lanes,
                        std::vector<int64_t>(t->shape, t->shape + t->ndim), std::move(strides));
}

}  // namespace

std::vector<std::vector<int64_t>> TensorNumbers(const std::vector<FunctionRecord>& functions) {
  std::map<TensorIdentity, int64_t> seen;
  std::vector<std::vector<int64_t>> out;
  for (const FunctionRecord& fn : functions) {
    std::vector<int64_t>& numbers = out.emplace_back();
    for (const auto& [index, value] : fn.bound) {
      const int64_t next = static_cast<int64_t>(seen.size());
      numbers.push_back(
          value.type_index() != ffi::TypeIndex::kTVMFFITensor
              ? -1
              : seen.emplace(IdentityOf(value.cast<ffi::Tensor>()), next).first->second);
    }
  }
  return out;
}

std::vector<ffi::Tensor> PayloadTensors(const std::vector<FunctionRecord>& functions) {
  const std::vector<std::vector<int64_t>> numbers = TensorNumbers(functions);
  std::vector<ffi::Tensor> tensors;
  for (size_t f = 0; f < functions.size(); ++f) {
    for (size_t b = 0; b < functions[f].bound.size(); ++b) {
      if (numbers[f][b] == static_cast<int64_t>(tensors.size()))
        tensors.push_back(functions[f].bound[b].second.cast<ffi::Tensor>());
    }
  }
  return tensors;
}

std::vector<const Shard*> PayloadShards(const std::vector<FunctionRecord>& functions) {
  const std::vector<std::vector<int64_t>> numbers = TensorNumbers(functions);
  std::vector<const Shard*> out;
  for (size_t f = 0; f < functions.size(); ++f) {
    for (size_t b = 0; b < functions[f].bound.size(); ++b) {
      if (numbers[f][b] == static_cast<int64_t>(out.size()))
        out.push_back(StoredShard(functions[f], functions[f].bound[b].first));
    }
  }
  return out;
}

uint64_t PayloadBytes(const DLTensor& tensor) {
  uint64_t bytes = 0;
  const std::string problem = ShapeProblem(tensor.shape, tensor.ndim, tensor.dtype, &bytes);
  if (!problem.empty()) TVM_FFI_THROW(ValueError) << "a tensor's payload: " << problem;
  return bytes;
}

uint64_t RegionSize(const std::vector<ffi::Tensor>& tensors) {
  uint64_t end = kRegionHeaderSize;
  for (const ffi::Tensor& t : tensors) end = AlignUp(end) + PayloadBytes(*t.GetDLTensorPtr());
  return end;
}

std::string EncodeRegionHeader(uint64_t size, uint64_t link) {
  std::string header(kRegionHeaderSize, '\0');
  const uint32_t version = kRegionVersion;
  std::memcpy(&header[0], kRegionMagic, 8);
  std::memcpy(&header[8], &version, 4);
  std::memcpy(&header[16], &size, 8);
  std::memcpy(&header[24], &link, 8);
  return header;
}

bool RegionHeaderMatches(const char* header, uint64_t size, uint64_t link) {
  return std::memcmp(header, EncodeRegionHeader(size, link).data(), kRegionHeaderSize) == 0;
}

}  // namespace format
}  // namespace tvm_partial
