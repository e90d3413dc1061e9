// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/payload_source.cc
 * \brief Locating payloads and building tensors from them (storage/payload_source.h).
 */
#include "storage/payload_source.h"

#include <tvm/ffi/container/shape.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "device.h"
#include "format/common.h"
#include "format/hash.h"
#include "storage/appended_region.h"
#include "storage/device_copy.h"
#include "storage/weights_file.h"

namespace tvm_partial {
namespace storage {

namespace {

#ifdef TVM_PARTIAL_FUZZING
constexpr bool kVerifyChecksums = false;  // as in format/reader.cc
#else
constexpr bool kVerifyChecksums = true;
#endif

const File& RequireLibrary(const format::Parsed& parsed, const Origin& origin) {
  if (origin.library == nullptr) {
    TVM_FFI_THROW(ValueError) << "the payloads of this partial_apply module lie in the file of "
                              << "the library it was exported in (region " << parsed.symbol
                              << "), not in its bytes: load that library "
                              << "(tvm.runtime.load_module or tvm_partial.load)";
  }
  return *origin.library;
}

// `parsed`'s payloads at their recorded offsets from `base` in `file` (null: the blob).
PayloadSource At(const char* placement, std::shared_ptr<File> file, uint64_t base,
                 const format::Parsed& parsed) {
  PayloadSource out{placement, file, {}, base, {file}, std::vector<size_t>(parsed.payloads.size())};
  for (size_t k = 0; k < parsed.payloads.size(); ++k) {
    out.offsets.push_back(base + parsed.Owner(k).tensor.offset);
  }
  return out;
}

PayloadSource FromOverride(const format::Parsed& parsed, const Origin& origin) {
  const weights::WeightsSet set = weights::OpenSet(origin.options.weights_file);
  PayloadSource out{"weights file given to load", set.files[0].file, {}, 0, {}, {}};
  for (const weights::Located& at : weights::Match(set, weights::WantedOf(parsed), origin.model)) {
    out.offsets.push_back(at.offset);
    out.file_of.push_back(at.file);
  }
  for (const weights::WeightsFile& f : set.files) out.files.push_back(f.file);
  return out;
}

PayloadSource FromWeightsFile(const format::Parsed& parsed, const Origin& origin) {
  RequireLibrary(parsed, origin);
  const std::string path = Beside(origin.library_path, parsed.weights_file);
  weights::WeightsFile file;
  try {
    file = weights::Open(path);
  } catch (const ffi::Error& err) {
    if (err.kind() != "FileNotFoundError") throw;
    TVM_FFI_THROW(FileNotFoundError)
        << "the weights file " << path << " of this artifact does not exist ("
        << origin.library->path << " records it as " << parsed.weights_file
        << ", beside itself); keep it beside the "
        << "library under that name, or load(path, weights_file=...) to bind the tensors of "
        << "another file";
  }
  weights::CheckRegionFile(file, parsed);
  return At("weights file", file.file, file.data_start, parsed);
}

// A host tensor viewing a mapping: no copy; it keeps the mapping alive.
struct MappedView {
  const char* data;
  std::shared_ptr<void> keepalive;
  void AllocData(DLTensor* tensor) { tensor->data = const_cast<char*>(data); }
  void FreeData(DLTensor* tensor) { tensor->data = nullptr; }
};

void CheckDevice(const format::TensorMeta& t, const std::string& where) {
  if (t.device_type == kDLCPU) return;
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
}

// A tensor of `t` on its device holding the `t.nbytes` bytes at `payload` (in a private file
// mapping when `mapped`: its pages are released once copied).
ffi::Tensor CopiedTensor(const format::TensorMeta& t, const char* payload, const std::string& where,
                         bool mapped = false) {
  DLDevice device{static_cast<DLDeviceType>(t.device_type), t.device_id};
  CheckDevice(t, where);
  ffi::Tensor out = AlignedEmpty(ffi::Shape(t.shape), t.dtype, device);
  if (t.device_type != kDLCPU) {
    CopyToDevice(payload, t.nbytes, out, DeviceCopyOptions::FromEnvironment(mapped));
  } else if (t.nbytes) {
    std::memcpy(out.data_ptr(), payload, t.nbytes);
  }
  return out;
}

// One payload for MakeTensors (`where`: its kind-5 binding): its record as the rank sees it (a
// shard's shape, bytes), its start, and `reorder` for a whole load of a shard-major tensor.
struct Piece {
  format::TensorMeta meta;
  uint64_t offset;
  std::string where;
  const format::Shard* reorder = nullptr;
};

// `p`'s shard-major `payload` back in row-major order (in place on host; via one host copy else).
ffi::Tensor ReorderedTensor(const Piece& p, const char* payload, bool mapped) {
  const format::TensorMeta& t = p.meta;
  const uint64_t per_rank = t.nbytes / static_cast<uint64_t>(p.reorder->world);
  auto unshard = [&](char* rows) {
    for (int64_t r = 0; r < p.reorder->world; ++r) {
      format::ScatterRank(payload + per_rank * static_cast<uint64_t>(r), rows, t.nbytes, t.shape,
                          t.dtype, *p.reorder, r);
    }
  };
  if (t.device_type == kDLCPU) {
    ffi::Tensor out = AlignedEmpty(ffi::Shape(t.shape), t.dtype, DLDevice{kDLCPU, 0});
    unshard(static_cast<char*>(out.data_ptr()));
    return out;
  }
  std::string rows(t.nbytes, '\0');
  unshard(rows.data());
  return CopiedTensor(t, rows.data(), p.where, mapped);
}

std::vector<Piece> Pieces(const format::Parsed& parsed, const PayloadSource& source,
                          const Origin& origin) {
  const LoadOptions& asked = origin.options;
  std::vector<Piece> out;
  out.reserve(source.offsets.size());
  for (size_t k = 0; k < parsed.payloads.size(); ++k) {
    const format::ParsedFunction& fn = parsed.OwnerFunction(k);
    const format::ParsedValue& v = parsed.Owner(k);
    Piece p{v.tensor, source.offsets[k], format::Where(fn, v.index)};
    if (asked.shard_world > 0 && asked.rank_device.device_type != kDLCPU &&
        p.meta.device_type == asked.rank_device.device_type) {
      p.meta.device_id = asked.rank_device.device_id;  // the rank's own GPU
    }
    for (const format::Shard& s : fn.shards) {
      if (s.position != v.index) continue;
      if (asked.shard_world <= 0) {
        if (s.layout == format::kShardMajor) p.reorder = &s;
        continue;
      }
      // ConfigureLoad checked the world; a slice past the end is never read.
      if (s.world != asked.shard_world || asked.shard_rank < 0 || asked.shard_rank >= s.world) {
        TVM_FFI_THROW(ValueError) << p.where << " is sharded over world " << s.world
                                  << ", not rank " << asked.shard_rank << " of "
                                  << asked.shard_world;
      }
      p.meta.shape = format::ShardShape(v.tensor.shape, s.dim, s.world);
      p.meta.nbytes = v.tensor.nbytes / static_cast<uint64_t>(s.world);
      p.offset += p.meta.nbytes * static_cast<uint64_t>(asked.shard_rank);
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

PayloadSource Locate(const format::Parsed& parsed, const Origin& origin) {
  if (!origin.options.weights_file.empty()) return FromOverride(parsed, origin);
  switch (parsed.placement) {
    case format::Placement::kInline:
      if (origin.blob != nullptr) return At("inline", nullptr, 0, parsed);
      if (origin.blob_file == nullptr) {  // else read from the file where the bytes lie
        TVM_FFI_THROW(InternalError) << "Locate: inline payloads without their bytes";
      }
      return At("inline", origin.blob_file, origin.blob_offset, parsed);
    case format::Placement::kAppended:
      return At("appended", origin.library,
                LocateAppended(RequireLibrary(parsed, origin), parsed.region_size, parsed.link),
                parsed);
    case format::Placement::kWeightsFile:
      return FromWeightsFile(parsed, origin);
  }
  TVM_FFI_UNREACHABLE();
}

std::vector<ffi::Tensor> MakeTensors(const format::Parsed& parsed, const PayloadSource& source,
                                     const Origin& origin) {
  const std::vector<Piece> pieces = Pieces(parsed, source, origin);
  std::vector<ffi::Tensor> out;
  out.reserve(pieces.size());
  if (source.file == nullptr) {  // inline, in memory (hash-checked by CheckBytes): copied
    for (const Piece& p : pieces) {
      out.push_back(p.reorder ? ReorderedTensor(p, origin.blob + p.offset, false)
                              : CopiedTensor(p.meta, origin.blob + p.offset, p.where));
    }
    return out;
  }
  // One private mapping per file over every payload it holds (for a rank: the slices it binds).
  const std::vector<size_t>& file_of = source.file_of;
  std::vector<uint64_t> lo(source.files.size(), UINT64_MAX), hi(source.files.size(), 0);
  for (size_t k = 0; k < pieces.size(); ++k) {
    lo[file_of[k]] = std::min(lo[file_of[k]], pieces[k].offset);
    hi[file_of[k]] = std::max(hi[file_of[k]], pieces[k].offset + pieces[k].meta.nbytes);
  }
  if (pieces.empty()) return out;
  std::vector<Mapping> mappings(source.files.size());
  for (size_t f = 0; f < mappings.size(); ++f) {
    if (lo[f] <= hi[f]) mappings[f] = MapPrivate(*source.files[f], lo[f], hi[f] - lo[f]);
  }
  const bool prefault = PrefaultFromEnvironment();
  for (size_t k = 0; k < pieces.size(); ++k) {
    const Piece& p = pieces[k];
    const Mapping& mapping = mappings[file_of[k]];
    const char* payload = mapping.data + (p.offset - lo[file_of[k]]);
    const format::TensorMeta& t = p.meta;
    // Only the bytes this load binds (a rank's slice), and only where they stay in the mapping.
    if (prefault && t.device_type == kDLCPU) Prefault(payload, t.nbytes);
    if (p.reorder != nullptr) {
      out.push_back(ReorderedTensor(p, payload, /*mapped=*/true));
    } else if (t.device_type == kDLCPU) {
      out.push_back(HostPayloadTensor(payload, mapping.keepalive, t.dtype, t.shape, t.nbytes));
    } else {
      out.push_back(CopiedTensor(t, payload, p.where, /*mapped=*/true));
    }
  }
  return out;
}

void CheckBytes(const format::Parsed& parsed, const char* blob) {
  for (size_t k = 0; k < parsed.payloads.size(); ++k) {
    const format::ParsedValue& v = parsed.Owner(k);
    const std::string where = format::Where(parsed.OwnerFunction(k), v.index);
    CheckDevice(v.tensor, where);
    if (parsed.placement == format::Placement::kInline && kVerifyChecksums &&
        hash::Hash(blob + v.tensor.offset, v.tensor.nbytes) != v.tensor.hash) {
      TVM_FFI_THROW(ValueError) << "corrupted partial_apply data: " << where
                                << ": tensor payload checksum mismatch";
    }
  }
}

ffi::Tensor HostPayloadTensor(const char* payload, const std::shared_ptr<void>& keepalive,
                              DLDataType dtype, const std::vector<int64_t>& shape,
                              uint64_t nbytes) {
  const DLDevice cpu{kDLCPU, 0};
  if (reinterpret_cast<uintptr_t>(payload) % format::kPayloadAlignment == 0) {
    return ffi::Tensor::FromNDAlloc(MappedView{payload, keepalive}, ffi::Shape(shape), dtype, cpu);
  }
  ffi::Tensor out = AlignedEmpty(ffi::Shape(shape), dtype, cpu);
  if (nbytes) std::memcpy(out.data_ptr(), payload, nbytes);
  return out;
}

}  // namespace storage
}  // namespace tvm_partial
