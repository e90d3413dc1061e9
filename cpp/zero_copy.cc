// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file zero_copy.cc
 * \brief The export of payloads outside TVM's embedded bytes, two globals (export.py and
 *        reexport.py call them around TVM's export_library): ExternalPayloads, a copy of a
 *        partial_apply module whose bytes leave its payloads to a region appended to the library
 *        file, or to a safetensors weights file beside it; WritePayloads, the one writer of them.
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
#include "storage/weights_file.h"

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

}  // namespace

TVM_FFI_STATIC_INIT_BLOCK() {
  // A copy of `mod` whose payloads go to the safetensors file `weights_file` names (relative to
  // the library's folder; flag 2), else to a region appended to the library once it is linked
  // (flag 4): its bytes are linked with zeros for the payload hashes, which WritePayloads records
  // as it writes the region.
  detail::RegisterGlobalOnce("tvm_partial.ExternalPayloads",
                             [](ffi::Module mod, ffi::Optional<ffi::String> weights_file,
                                ffi::Optional<ffi::String> symbol, ffi::Optional<int64_t> link) {
                               if (weights_file.has_value()) {
                                 return WithRegion("export_library", mod, symbol, link,
                                                   std::string(*weights_file));
                               }
                               format::ExternalRegion region = *detail::PartialModuleRegion(
                                   WithRegion("export_library", mod, symbol, link, std::nullopt));
                               region.appended = true;
                               region.hashes_given = true;  // zeros, until WritePayloads knows them
                               return detail::WithExternalRegion(mod, std::move(region));
                             });
  // Write the payloads of a module from ExternalPayloads to `path`: its weights file; or its
  // region appended to the linked library there (lead < 0), hashed as it is written, the hashes
  // then written over the zeros of the module's bytes in that library (the same length); or its
  // region after `lead` bytes (the update of a loaded artifact, which copies the library around
  // it), returning the module's bytes with their hashes.
  detail::RegisterGlobalOnce(
      "tvm_partial.WritePayloads",
      [](ffi::Module mod, ffi::String path, ffi::Optional<ffi::Function> progress,
         int64_t lead) -> ffi::Optional<ffi::Bytes> {
        const format::ExternalRegion* region = detail::PartialModuleRegion(mod);
        const std::vector<format::FunctionRecord>* records = detail::PartialModuleRecords(mod);
        if (region == nullptr || records == nullptr) {
          TVM_FFI_THROW(TypeError) << "WritePayloads: needs a module from ExternalPayloads";
        }
        if (!region->appended) {
          weights::WriteRegionFile(mod, path);
          return std::nullopt;
        }
        format::ExternalRegion hashed = *region;
        if (lead >= 0) {
          if (lead % static_cast<int64_t>(format::kPayloadAlignment) != 0) {
            TVM_FFI_THROW(ValueError)
                << "WritePayloads: lead must be a multiple of 64, got " << lead;
          }
          storage::WriteRegion(*records, *region, std::string(path), static_cast<uint64_t>(lead));
          hashed.hashes_given = false;  // each payload hashed where it is, in memory
          hashed.hashes.clear();
          const std::string bytes = format::Encode(*records, &hashed);
          return ffi::Bytes(bytes.data(), bytes.size());
        }
        const ffi::Bytes linked = mod->SaveToBytes();
        hashed.hashes = storage::AppendRegion(*records, *region, std::string(path), progress);
        hashed.hashes_given = !hashed.hashes.empty();
        storage::ReplaceEmbeddedModule(std::string(path), "partial_apply",
                                       std::string(linked.data(), linked.size()),
                                       format::Encode(*records, &hashed));
        return std::nullopt;
      });
}

}  // namespace tvm_partial
