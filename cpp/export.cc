// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file export.cc
 * \brief tvm_partial.Export: payloads inline, appended to the linked library (zero-copy) or in a
 *        safetensors file beside it; for loaded code, an updated copy of its artifact. Linking is
 *        TVM's export_library, in Python, which Export calls back.
 */
#include <sys/stat.h>
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "format/format.h"
#include "inspect.h"
#include "partial_module.h"
#include "registry.h"
#include "storage/appended_region.h"
#include "storage/library.h"
#include "storage/weights_file.h"

namespace tvm_partial {

namespace {

// The payloads' region: `symbol` and `link` as given, else drawn at random (a region or weights
// file belongs to the library written with it).
format::ExternalRegion NewRegion(const ffi::Optional<ffi::String>& symbol,
                                 ffi::Optional<int64_t> link) {
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
    TVM_FFI_THROW(ValueError) << "export_library: the symbol must start with "
                              << format::kRegionSymbolPrefix;
  }
  return {std::move(name), link.has_value() ? static_cast<uint64_t>(*link) : draw() >> 1};
}

// The file `module`'s code was mapped from (what its update copies): the one our loader kept if
// it is that file, else the one the system's loader mapped by name, proven so.
storage::LoadedLibrary SourceOf(const ffi::Module& module, const ffi::Module& library) {
  std::shared_ptr<storage::File> kept = detail::LibraryFile(module);
  if (kept != nullptr && storage::LoadedFrom(library, *kept)) {
    return storage::LoadedLibrary{kept, storage::RealPath(*kept)};
  }
  try {
    return storage::OpenLoadedLibrary(library);
  } catch (const ffi::Error& err) {
    TVM_FFI_THROW(ValueError) << "export_library: " << err.message() << "; or bind the compiled "
                              << "module again with tvm_partial.partial() and export that";
  }
  TVM_FFI_UNREACHABLE();
}

// Export of a module whose code was loaded from an artifact (maybe rebound): TVM cannot export
// loaded code, so `staged` becomes a copy of that artifact with this module's bytes in TVM's blob
// and, if zero-copy, its region rewritten (same lengths: rebind keeps dtypes and shapes).
void ExportLoaded(ffi::Module module, ffi::Module library, ffi::String path, ffi::String staged,
                  ffi::Optional<bool> zero_copy, ffi::Array<ffi::String> options) {
  if (!library->ImplementsFunction("_library_bin")) {
    TVM_FFI_THROW(ValueError)
        << "export_library: this module's code was loaded from a library which TVM cannot "
        << "export again, and it is not a tvm-partial artifact to update (it embeds no "
        << "partial_apply module); bind the compiled module (what tvm.compile returned) and "
        << "export that";
  }
  const storage::LoadedLibrary source = SourceOf(module, library);
  const std::string& name = source.real_path;
  if (!options.empty()) {
    std::string given;
    for (const ffi::String& o : options) given += (given.empty() ? "" : ", ") + std::string(o);
    TVM_FFI_THROW(ValueError)
        << "export_library: " << given << " cannot apply to a module loaded from " << name
        << ": its export copies that library, code and link options as they are; bind the "
        << "compiled module again with tvm_partial.partial() to export with other options";
  }
  struct stat at_path, of_source;
  if (stat(std::string(path).c_str(), &at_path) == 0 &&
      fstat(source.file->fd.get(), &of_source) == 0 && at_path.st_dev == of_source.st_dev &&
      at_path.st_ino == of_source.st_ino) {
    TVM_FFI_THROW(ValueError) << "export_library: " << path << " is the file this module was "
                              << "loaded from; write the updated artifact to a new path (a "
                              << "loaded artifact is never changed in place)";
  }
  Dict described;
  try {  // the loader's rules: an artifact it would refuse is refused
    described = InspectFile(name, source.file, false).cast<Dict>();
  } catch (const ffi::Error& err) {
    TVM_FFI_THROW(ValueError) << "export_library: this module's code was loaded from " << name
                              << ", which TVM cannot export again, and it is not an intact "
                              << "tvm-partial artifact to update (" << err.message() << "); "
                              << "bind the compiled module (what tvm.compile returned) and "
                              << "export that";
  }
  if (auto weights = described.at("weights_file").try_cast<ffi::String>()) {
    TVM_FFI_THROW(ValueError)
        << "export_library: " << name << " keeps its weights in the file " << *weights
        << "; to ship new weights for it, write them with tvm_partial.save_weights(module, "
        << "path) and load it with tvm_partial.load(artifact, weights_file=path)";
  }
  const auto region = described.at("region").try_cast<Dict>();
  const bool appended =
      region.has_value() && region->at("placement").cast<ffi::String>() == "appended";
  if (zero_copy.has_value() && *zero_copy != appended) {
    TVM_FFI_THROW(ValueError)
        << "export_library: zero_copy=" << (*zero_copy ? "True" : "False") << " differs from "
        << name << ", whose payloads are " << (appended ? "appended to the file" : "inline")
        << "; the updated artifact keeps that placement (bind the compiled module again with "
        << "tvm_partial.partial() to change it)";
  }
  Dict part;
  for (const ffi::Any& m :
       described.at("embedded").cast<Dict>().at("modules").cast<ffi::Array<ffi::Any>>()) {
    if (m.cast<Dict>().at("kind").cast<ffi::String>() == "partial_apply") {
      part = m.cast<Dict>();
      break;
    }
  }
  const int64_t part_at = part.at("file_offset").cast<int64_t>();
  const int64_t part_bytes = part.at("bytes").cast<int64_t>();
  ffi::Module external = module;
  if (appended) {  // hashes given, none yet: zeros of their length (computed below)
    external = detail::WithExternalRegion(
        module, {std::string(region->at("symbol").cast<ffi::String>()),
                 static_cast<uint64_t>(region->at("link").cast<int64_t>()), /*weights_file=*/"",
                 /*appended=*/true, /*hashes_given=*/true});
  }
  const ffi::Bytes saved = external->SaveToBytes();
  std::string blob(saved.data(), saved.size());
  if (static_cast<int64_t>(blob.size()) != part_bytes) {
    TVM_FFI_THROW(ValueError)
        << "export_library: the updated bindings take " << blob.size() << " bytes, the artifact "
        << name << " has room for " << part_bytes << ": a loaded artifact is updated in a copy of "
        << "its file, which needs values of the same dtypes and shapes and strings of the same "
        << "lengths; bind the compiled module again with tvm_partial.partial() and export that";
  }
  std::string was(static_cast<size_t>(part_bytes), '\0');
  if (!storage::ReadAt(*source.file, static_cast<uint64_t>(part_at), was.size(), &was[0])) {
    TVM_FFI_THROW(ValueError) << "export_library: " << name
                              << " is shorter than it was when loaded";
  }
  const std::string out(staged);
  if (appended) {
    // The region is written in place (the weights once); code and trailer are copied around it.
    const auto region_at = static_cast<uint64_t>(region->at("file_offset").cast<int64_t>());
    const auto region_bytes = static_cast<uint64_t>(region->at("bytes").cast<int64_t>());
    const std::vector<format::FunctionRecord>& records = *detail::PartialModuleRecords(external);
    format::ExternalRegion hashed = *detail::PartialModuleRegion(external);
    storage::WriteRegion(records, hashed, out, region_at);
    struct stat written;
    if (stat(out.c_str(), &written) != 0 ||
        static_cast<uint64_t>(written.st_size) - region_at != region_bytes) {
      TVM_FFI_THROW(ValueError) << "export_library: the updated payload region takes "
                                << static_cast<uint64_t>(written.st_size) - region_at << " bytes, "
                                << name << " has " << region_bytes
                                << "; rebind keeps dtypes and shapes, or export from the "
                                << "compiled module";
    }
    storage::CopyAround(*source.file, out, region_at, region_bytes);
    hashed.hashes_given = false;  // each payload hashed where it is, in memory
    blob = format::Encode(records, &hashed);
  } else {
    storage::CopyAround(*source.file, out, source.file->size, 0);
  }
  storage::ReplaceEmbeddedModule(out, "partial_apply", was, blob);
  if (fstat(source.file->fd.get(), &of_source) == 0) chmod(out.c_str(), of_source.st_mode & 07777);
  try {  // the copy must read back as its source does
    InspectFile(name, storage::OpenRegular(out, "artifact"), false);
  } catch (const ffi::Error& err) {
    TVM_FFI_THROW(ValueError) << "export_library: the updated copy of " << name
                              << " does not read back (" << err.message() << "); " << name
                              << " changed while it was copied";
  }
}

// `options[key]` as a T, or T() (nullopt, empty) when absent or None.
template <typename T>
T Option(const ffi::Map<ffi::String, ffi::Any>& options, const char* key) {
  auto found = options.Get(key);
  if (!found.has_value() || found->type_index() == ffi::TypeIndex::kTVMFFINone) return T();
  return found->cast<T>();
}

// `module` to `staged` (new, in `path`'s folder; Python moves it onto `path`), linked by
// `link(module, file)` (TVM's export_library, user's options). `options`: "zero_copy" (absent: by
// the constants' size), "weights_file" (the name the library records) with "weights_path" (where
// it is staged), "progress" (while appending), "given" (TVM's options by name: refused for a
// loaded artifact), "symbol" and "link" (the region's; random when absent: fixed = reproducible).
void Export(ffi::Module module, ffi::String path, ffi::String staged, ffi::Function link,
            ffi::Map<ffi::String, ffi::Any> options) {
  static const char* const kKnown[] = {"zero_copy", "weights_file", "weights_path", "progress",
                                       "given",     "symbol",       "link"};
  for (const auto& [key, _] : options) {
    if (std::none_of(std::begin(kKnown), std::end(kKnown),
                     [&key = key](const char* k) { return key == k; })) {
      TVM_FFI_THROW(ValueError) << "Export: unknown option '" << key << "'";
    }
  }
  const std::vector<format::FunctionRecord>* records = detail::PartialModuleRecords(module);
  if (records == nullptr) TVM_FFI_THROW(TypeError) << "export_library: not a partial_apply module";
  const ffi::Optional<ffi::Module> code = detail::PartialModuleCode(module);
  if (code.has_value() && std::string((*code)->kind()) == "relax.VirtualMachine") {
    TVM_FFI_THROW(TypeError)
        << "export_library: this partial module binds a relax.VirtualMachine, which cannot be "
        << "saved; bind the executable instead: tvm_partial.partial(exe, device=dev, ...) (what "
        << "tvm.compile returned), which records the device and creates the VM when loaded";
  }
  const auto zero_copy = Option<ffi::Optional<bool>>(options, "zero_copy");
  const auto weights_file = Option<ffi::Optional<ffi::String>>(options, "weights_file");
  const auto symbol = Option<ffi::Optional<ffi::String>>(options, "symbol");
  const auto link_number = Option<ffi::Optional<int64_t>>(options, "link");
  if (weights_file.has_value() && zero_copy.has_value() && !*zero_copy) {
    TVM_FFI_THROW(ValueError) << "export_library: weights_file= places the payloads in that file; "
                              << "zero_copy=False (payloads inside the library) contradicts it";
  }
  if (auto library = detail::FindLibrary(module->imports())) {  // the code was loaded
    if (weights_file.has_value()) {
      TVM_FFI_THROW(ValueError)
          << "export_library: weights_file= with a module loaded from an artifact is not "
          << "supported: bind the compiled module with tvm_partial.partial() and export that";
    }
    ExportLoaded(module, *library, path, staged, zero_copy,
                 Option<ffi::Array<ffi::String>>(options, "given"));
    return;
  }
  if (weights_file.has_value()) {  // the weights file first: the library names it
    format::ExternalRegion region = NewRegion(symbol, link_number);
    region.weights_file = std::string(*weights_file);
    if (region.weights_file.empty()) {
      TVM_FFI_THROW(ValueError) << "export_library: empty weights file name";
    }
    const ffi::Module external = detail::WithExternalRegion(module, region);
    weights::WriteRegionFile(*records, region, options.at("weights_path").cast<ffi::String>());
    link(external, staged);
    return;
  }
  uint64_t bytes = 0;
  for (const ffi::Tensor& t : format::PayloadTensors(*records)) {
    bytes += format::PayloadBytes(*t.GetDLTensorPtr());
  }
  if (!zero_copy.value_or(bytes >= format::kZeroCopyBytes)) {
    link(module, staged);
    return;
  }
  const std::string file(path);
  for (const char* suffix : {".tar", ".wasm"}) {
    if (file.size() >= std::strlen(suffix) &&
        file.compare(file.size() - std::strlen(suffix), std::string::npos, suffix) == 0) {
      TVM_FFI_THROW(ValueError) << "export_library: a zero-copy export appends the payloads to a "
                                << "shared library; " << file << " is not one (export to a .so, "
                                << "or pass zero_copy=False)";
    }
  }
  // Linked with zero hashes; the region is appended in one write, hashed as written, and the
  // hashes then overwrite the zeros (same length).
  format::ExternalRegion region = NewRegion(symbol, link_number);
  region.appended = true;
  region.hashes_given = true;
  const ffi::Module external = detail::WithExternalRegion(module, region);
  const ffi::Bytes linked = external->SaveToBytes();
  link(external, staged);
  region.hashes = storage::AppendRegion(*records, region, std::string(staged),
                                        Option<ffi::Optional<ffi::Function>>(options, "progress"));
  region.hashes_given = !region.hashes.empty();
  storage::ReplaceEmbeddedModule(std::string(staged), "partial_apply",
                                 std::string(linked.data(), linked.size()),
                                 format::Encode(*records, &region));
}

}  // namespace

TVM_FFI_STATIC_INIT_BLOCK() { detail::RegisterGlobalOnce("tvm_partial.Export", Export); }

}  // namespace tvm_partial
