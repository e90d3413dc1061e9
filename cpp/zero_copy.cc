// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file zero_copy.cc
 * \brief The zero-copy export's globals (python/tvm_partial/artifact/zero_copy.py calls them): a
 *        copy of a partial_apply module whose bytes leave its payloads to a region appended to
 *        the library file, or to a safetensors weights file beside it, and the writers of that
 *        region.
 */
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <cstdint>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "format/format.h"
#include "partial_module.h"
#include "registry.h"
#include "storage/appended_region.h"
#include "storage/module_tree.h"

namespace tvm_partial {

namespace {

/*!
 * \brief A copy of the partial_apply module `mod` whose SaveToBytes leaves the payloads to the
 *        region named `symbol`, appended to the library (or, with `weights_file`, in that file
 *        beside it). A new export draws the name and the link at random (None): a region, and
 *        a weights file, belong to the library they were written with; a re-export, and the
 *        tests' fixed artifacts, give the ones recorded.
 * \throws TypeError for another module, ValueError for a bad symbol or an empty file name.
 */
ffi::Module WithRegion(const char* who, const ffi::Module& mod,
                       const ffi::Optional<ffi::String>& symbol, ffi::Optional<int64_t> link,
                       const std::optional<std::string>& weights_file) {
  if (detail::PartialModuleRecords(mod) == nullptr)
    TVM_FFI_THROW(TypeError) << who << ": not a partial_apply module";
  std::random_device random;
  auto draw = [&random] { return (uint64_t{random()} << 32) | uint64_t{random()}; };
  std::string name;
  if (symbol.has_value()) {
    name = std::string(*symbol);
  } else {
    char hex[17];
    std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(draw()));  // NOLINT
    name = std::string(format::kRegionSymbolPrefix) + hex;
  }
  if (name.rfind(format::kRegionSymbolPrefix, 0) != 0) {
    TVM_FFI_THROW(ValueError) << who << ": the symbol must start with "
                              << format::kRegionSymbolPrefix;
  }
  if (weights_file.has_value() && weights_file->empty())
    TVM_FFI_THROW(ValueError) << who << ": empty weights file name";
  const uint64_t drawn = link.has_value() ? static_cast<uint64_t>(*link) : draw() >> 1;
  format::ExternalRegion region{std::move(name), drawn, weights_file.value_or("")};
  return detail::WithExternalRegion(mod, std::move(region));
}

/*! \brief The region of a module from WithAppendedPayloads; TypeError for any other module. */
const format::ExternalRegion* AppendedRegion(const char* who, const ffi::Module& mod) {
  const format::ExternalRegion* region = detail::PartialModuleRegion(mod);
  if (region == nullptr || !region->appended)
    TVM_FFI_THROW(TypeError) << who << ": needs a module from WithAppendedPayloads";
  return region;
}

}  // namespace

TVM_FFI_STATIC_INIT_BLOCK() {
  // A copy of `mod` whose payloads go to a safetensors weights file beside the library (flag 2);
  // `weights_file` is relative to the library's folder.
  detail::RegisterGlobalOnce("tvm_partial.WithExternalWeights",

                             [](ffi::Module mod, ffi::Optional<ffi::String> symbol,
                                ffi::Optional<int64_t> link, ffi::String weights_file) {
                               return WithRegion("WithExternalWeights", mod, symbol, link,
                                                 std::string(weights_file));
                             });
  // The default zero-copy export (flag 4): AppendPayloadRegion appends the region to the linked
  // library file and records its payload hashes in the partial module's bytes there (linked with
  // zeros).
  detail::RegisterGlobalOnce(
      "tvm_partial.WithAppendedPayloads",
      [](ffi::Module mod, ffi::Optional<ffi::String> symbol, ffi::Optional<int64_t> link) {
        ffi::Module out = WithRegion("WithAppendedPayloads", mod, symbol, link, std::nullopt);
        format::ExternalRegion region = *detail::PartialModuleRegion(out);
        region.appended = true;
        return detail::WithExternalRegion(mod, std::move(region));
      });
  detail::RegisterGlobalOnce(
      "tvm_partial.AppendPayloadRegion",

      [](ffi::Module mod, ffi::String path, ffi::Optional<ffi::Function> progress) {
        const format::ExternalRegion* region = AppendedRegion("AppendPayloadRegion", mod);
        const std::vector<format::FunctionRecord>& records = *detail::PartialModuleRecords(mod);
        const ffi::Bytes linked = mod->SaveToBytes();
        format::ExternalRegion hashed = *region;
        hashed.hashes = storage::AppendRegion(records, *region, std::string(path), progress);
        hashed.hashes_given = !hashed.hashes.empty();
        storage::ReplaceEmbeddedModule(std::string(path), "partial_apply",
                                       std::string(linked.data(), linked.size()),
                                       format::Encode(records, &hashed));
      });
  // A copy of a module from WithAppendedPayloads that records zeros for its payload hashes: the
  // export links these bytes, and AppendPayloadRegion appends the region (hashing it as it is
  // written) and then writes the real hashes over them (the same length).
  detail::RegisterGlobalOnce("tvm_partial.WithZeroPayloadHashes", [](ffi::Module mod) {
    format::ExternalRegion region = *AppendedRegion("WithZeroPayloadHashes", mod);
    region.hashes_given = true;
    region.hashes.clear();
    return detail::WithExternalRegion(mod, std::move(region));
  });
  detail::RegisterGlobalOnce(
      "tvm_partial.WritePayloadRegion", [](ffi::Module mod, ffi::String path, int64_t lead) {
        const format::ExternalRegion* region = detail::PartialModuleRegion(mod);
        if (region == nullptr) {
          TVM_FFI_THROW(TypeError)
              << "WritePayloadRegion: needs a module from WithAppendedPayloads "
                 "or WithExternalWeights";
        }
        if (lead < 0 || lead % static_cast<int64_t>(format::kPayloadAlignment) != 0) {
          TVM_FFI_THROW(ValueError)
              << "WritePayloadRegion: lead must be a multiple of 64, got " << lead;
        }
        storage::WriteRegion(*detail::PartialModuleRecords(mod), *region, std::string(path),
                             static_cast<uint64_t>(lead));
      });
}

}  // namespace tvm_partial
