// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file format/describe.cc
 * \brief The parsed format as data (format.h `Describe`), for inspect, the CLI and the tests.
 */
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/dtype.h>

#include "device.h"
#include "format/common.h"
#include "format/format.h"

namespace tvm_partial {
namespace format {

using Dict = ffi::Map<ffi::String, ffi::Any>;

Dict Describe(const Parsed& parsed) {
  static const char* kKindNames[] = {"None", "int", "float", "bool", "str"};
  ffi::Array<ffi::Any> functions;
  uint64_t constant_bytes = 0;
  for (const ParsedFunction& fn : parsed.functions) {
    ffi::Array<ffi::Any> bindings;
    for (const ParsedValue& v : fn.values) {
      if (v.kind != kTensor && v.kind != kSharedTensor) {
        bindings.push_back(Dict{
            {"position", v.index}, {"kind", ffi::String(kKindNames[v.kind])}, {"value", v.scalar}});
        continue;
      }
      const TensorMeta& t = v.tensor;
      Dict b{{"position", v.index},
             {"kind", ffi::String("tensor")},
             {"dtype", ffi::DLDataTypeToString(t.dtype)},
             {"shape", ffi::Array<int64_t>(t.shape.begin(), t.shape.end())},
             {"device", ffi::String(detail::DeviceString(t.device_type, t.device_id))},
             {"bytes", static_cast<int64_t>(t.nbytes)},
             {"offset", static_cast<int64_t>(t.offset)},
             {"hash", static_cast<int64_t>(t.hash)},
             {"payload", static_cast<int64_t>(v.payload)}};
      if (v.kind == kSharedTensor) {
        b.Set("shared_with", Dict{{"function", parsed.OwnerFunction(v.payload).name},
                                  {"position", parsed.Owner(v.payload).index}});
      } else {
        constant_bytes += t.nbytes;  // each payload once
      }
      for (const Shard& shard : fn.shards) {
        if (shard.position != v.index) continue;
        const std::vector<int64_t> shape = ShardShape(t.shape, shard.dim, shard.world);
        ffi::Array<int64_t> hashes;  // as the int64 of their bits, like "hash"
        for (uint64_t h : shard.hashes) hashes.push_back(static_cast<int64_t>(h));
        b.Set("shard",
              Dict{{"dim", shard.dim},
                   {"world", shard.world},
                   {"layout", ffi::String(shard.layout == kShardMajor ? "shard-major" : "rows")},
                   {"segments", shard.segments},
                   {"shape", ffi::Array<int64_t>(shape.begin(), shape.end())},
                   {"bytes", static_cast<int64_t>(t.nbytes / shard.world)},
                   {"hashes", hashes}});
      }
      bindings.push_back(b);
    }
    functions.push_back(Dict{{"name", fn.name},
                             {"param_names", fn.param_names},
                             {"bindings", bindings},
                             {"outputs", detail::OutputsToAny(fn.outputs)}});
  }
  Dict out{{"version", static_cast<int64_t>(parsed.version)},
           {"total_bytes", static_cast<int64_t>(parsed.total)},
           {"constant_bytes", static_cast<int64_t>(constant_bytes)},
           {"payloads", ffi::String(parsed.external() ? "region " + parsed.symbol : "inline")}};
  if (!parsed.weights_file.empty()) out.Set("weights_file", ffi::String(parsed.weights_file));
  if (parsed.placement == Placement::kAppended) out.Set("region_appended", true);
  if (parsed.external()) {
    out.Set("region_symbol", ffi::String(parsed.symbol));
    out.Set("region_link", static_cast<int64_t>(parsed.link));
    out.Set("region_size", static_cast<int64_t>(parsed.region_size));
  }
  out.Set("functions", functions);
  return out;
}

}  // namespace format
}  // namespace tvm_partial
