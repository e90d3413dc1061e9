// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file format/describe.cc
 * \brief The parsed format as data (format.h `Describe`), for inspect, the CLI and the tests.
 */
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/string.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bind/outputs.h"
#include "device.h"
#include "format/common.h"
#include "format/format.h"

namespace tvm_partial {
namespace format {

ffi::Map<ffi::String, ffi::Any> Describe(const Parsed& parsed) {
  static const char* kKindNames[] = {"None", "int", "float", "bool", "str", "tensor"};
  ffi::Array<ffi::Any> functions;
  uint64_t constant_bytes = 0;
  for (const ParsedFunction& fn : parsed.functions) {
    ffi::Array<ffi::Any> bindings;
    for (const ParsedValue& v : fn.values) {
      ffi::Map<ffi::String, ffi::Any> b;
      b.Set("position", v.index);
      b.Set("kind", ffi::String(kKindNames[v.kind == kSharedTensor ? kTensor : v.kind]));
      if (v.kind == kTensor || v.kind == kSharedTensor) {
        b.Set("dtype", ffi::DLDataTypeToString(v.tensor.dtype));
        b.Set("shape", ffi::Array<int64_t>(v.tensor.shape.begin(), v.tensor.shape.end()));
        b.Set("device",
              ffi::String(detail::DeviceString(v.tensor.device_type, v.tensor.device_id)));
        b.Set("bytes", static_cast<int64_t>(v.tensor.nbytes));
        b.Set("offset", static_cast<int64_t>(v.tensor.offset));
        b.Set("hash", static_cast<int64_t>(v.tensor.hash));
        b.Set("payload", static_cast<int64_t>(v.payload));
        if (v.kind == kSharedTensor) {
          const ParsedFunction& owner = parsed.OwnerFunction(v.payload);
          ffi::Map<ffi::String, ffi::Any> with;
          with.Set("function", owner.name);
          with.Set("position", parsed.Owner(v.payload).index);
          b.Set("shared_with", with);
        } else {
          constant_bytes += v.tensor.nbytes;  // each payload once
        }
        for (const Shard& shard : fn.shards) {
          if (shard.position != v.index) continue;
          ffi::Map<ffi::String, ffi::Any> sh;
          sh.Set("dim", shard.dim);
          sh.Set("world", shard.world);
          sh.Set("layout", ffi::String(shard.layout == kShardMajor ? "shard-major" : "rows"));
          sh.Set("segments", shard.segments);
          sh.Set("shape", [&] {
            std::vector<int64_t> s = ShardShape(v.tensor.shape, shard.dim, shard.world);
            return ffi::Array<int64_t>(s.begin(), s.end());
          }());
          sh.Set("bytes", static_cast<int64_t>(v.tensor.nbytes / shard.world));
          ffi::Array<int64_t> hashes;  // as the int64 of their bits, like "hash"
          for (uint64_t h : shard.hashes) hashes.push_back(static_cast<int64_t>(h));
          sh.Set("hashes", hashes);
          b.Set("shard", sh);
        }
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
  out.Set("payloads", ffi::String(parsed.external() ? "region " + parsed.symbol : "inline"));
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
