// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/weights_file.h
 * \brief Internal: safetensors weights files: the one header reader (`Open`, checking it whole:
 *        docs/hardening.md) and the key rule for bound tensors (docs/weights_files.md).
 */
#ifndef TVM_PARTIAL_STORAGE_WEIGHTS_FILE_H_
#define TVM_PARTIAL_STORAGE_WEIGHTS_FILE_H_

#include <tvm/ffi/container/array.h>
#include <tvm/ffi/extra/json.h>
#include <tvm/ffi/string.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "format/format.h"
#include "format/model_record.h"
#include "storage/file.h"

namespace tvm_partial {
namespace weights {

constexpr uint64_t kMaxHeader = 100u << 20;  // largest header read: safetensors' own limit
constexpr int kMaxDepth = 8;  // deepest header nesting: the object, an entry, its shape
constexpr const char kPaddingPrefix[] = "__padding__/";
constexpr const char kRegionKey[] = "__tvm_partial_region__";
constexpr const char kMetadataFormat[] = "tvm_partial.format";
constexpr const char kMetadataBindings[] = "tvm_partial.bindings";
constexpr const char kMetadataHashes[] = "tvm_partial.hashes";
constexpr const char kMetadataShared[] = "tvm_partial.shared";

// A dtype safetensors and TVM share: its code, TVM name, bits (F4, F6_*: packed).
struct Dtype {
  const char* code;
  const char* tvm;
  uint64_t bits;
};
// Throw ValueError "weights file PATH is/lacks ..." or "weights file PATH: WHAT".
[[noreturn]] void Bad(const std::string& path, const std::string& what);
const Dtype* DtypeByTvm(const std::string& tvm);  // "float32" -> its entry, else null
std::string KnownCodes();  // "BF16, BOOL, F16, ...": the codes read, for messages

struct Entry {
  const Dtype* dtype;
  std::vector<int64_t> shape;
  uint64_t begin;  // in the data
  uint64_t end;
};

struct WeightsFile {
  std::shared_ptr<storage::File> file;
  uint64_t data_start = 0;  // file offset of the data (8 + header length)
  uint64_t data_size = 0;
  std::map<std::string, Entry> entries;         // every entry, padding and region included
  std::map<std::string, std::string> metadata;  // `__metadata__`, strings only
  // Whether `key` is a tensor someone binds (not padding, not the region header).
  static bool IsTensorKey(const std::string& key);
};

// `text` as JSON if UTF-8 and at most `max_depth` deep (checked before the recursive parser runs).
// \throws ValueError naming `path` and `what`.
ffi::json::Value ParseJson(const std::string& path, const std::string& text, int max_depth,
                           const char* what);

// Check the header of `path` (or `opened`). \throws FileNotFoundError; ValueError naming the fault.
WeightsFile Open(const std::string& path, std::shared_ptr<storage::File> opened = nullptr);

struct SetEntry {
  size_t file;
  Entry entry;
};

// One safetensors file, or a split checkpoint's files and index (`*.safetensors.index.json` as
// transformers writes it: `{"weight_map": {tensor: file}}`, files beside it).
struct WeightsSet {
  std::string path;  // the file, or the index, as given
  bool indexed = false;
  std::vector<WeightsFile> files;           // in the order the index first names them
  std::map<std::string, SetEntry> tensors;  // every tensor key (no padding, no region header)
};

bool IsIndex(const std::string& path);  // ends in `.json`: an index, not a safetensors file
bool IsOnnx(const std::string& path);   // ends in `.onnx` (read by the onnx package, never here)

// Open `path` (or `opened`), or the index there and each file it names in the folder `path` spells
// (not its real one: the Hugging Face cache links each snapshot file to its own blob). `weight_map`
// must match exactly: not empty, each tensor once, in the file it names, none outside the folder.
// \throws FileNotFoundError naming the index and its missing file; ValueError otherwise.
WeightsSet OpenSet(const std::string& path, std::shared_ptr<storage::File> opened = nullptr);

// `tvm_partial.hashes` (key -> 16 hex digits), or nullopt when absent.
// The Recorded* functions throw ValueError naming the file when their record is malformed.
std::optional<std::map<std::string, uint64_t>> RecordedHashes(const WeightsFile& file);

// `tvm_partial.bindings` (may be empty): key of any place -> `[function, position]`.
std::map<std::string, std::pair<std::string, int64_t>> RecordedBindings(const WeightsFile& file);

// `tvm_partial.shared`: other place's key -> stored key (a tensor the file holds); may be empty.
std::map<std::string, std::string> RecordedShared(const WeightsFile& file);

// `FUNCTION/PARAMETER`, or `FUNCTION/POSITION` if the name is unknown, not unique, holds `/` or
// is digits: for Keys() where a bare name cannot stand; older files key all so (CheckRegionFile).
std::string QualifiedKey(const std::string& function, int64_t position,
                         const ffi::Array<ffi::String>& param_names);

// A key read back: `FUNCTION/NAME`, `FUNCTION/POSITION` or a bare `NAME`.
struct KeyRef {
  std::string function;  // empty for a bare name
  std::string name;      // empty when a position is given
  int64_t position = -1;
};
// Parse `key` (ASCII digits after the `/` are a position). \throws ValueError naming the file
// for a position no call can reach.
KeyRef ParseKey(const std::string& path, const std::string& key);

struct Place {
  std::string function;
  int64_t position;
  const ffi::Array<ffi::String>* param_names;
};

// A distinct bound tensor (one payload, supplied once): its places in order, its type.
struct Wanted {
  std::vector<Place> places;
  std::string dtype;
  std::vector<int64_t> shape;
};

// Unique keys: `keys[i][j]` for place j of `tensors[i]`, stored under `keys[i][0]`. Bare parameter
// name if recorded, unique in its function, no `/`, not digits, not `__metadata__`, on no other
// tensor's place, and this is its first; else `FUNCTION/PARAMETER`; else `FUNCTION/POSITION`.
std::vector<std::vector<std::string>> Keys(const std::vector<Wanted>& tensors);

struct Located {
  size_t file;
  uint64_t offset;
};

// Where `set` supplies each of `wanted`, in order. `FUNCTION/...` keys resolve in their function,
// a bare name to the one tensor bound at a parameter so named. Each tensor must come with its dtype
// and shape (a tie by any place's key; by several only if equal, as a cloned state_dict saves
// one); other keys only where `model` names them (compiled-in tensors holding exactly the compiled
// value; tie aliases). \throws ValueError naming file, key and binding.
std::vector<Located> Match(const WeightsSet& set, const std::vector<Wanted>& wanted,
                           const ModelRecord& model = {});

// The tensors a parsed blob binds, one per payload, with every place (kinds 5 and 6).
std::vector<Wanted> WantedOf(const format::Parsed& parsed);

// Check a `weights_file=` export's file against `parsed`: its region header at data [0, 64), each
// payload at exactly its offsets, whole region. \throws ValueError naming the file.
void CheckRegionFile(const WeightsFile& file, const format::Parsed& parsed);

// Write `records`' `weights_file=` export file (`region`) to `path`; RuntimeError naming both.
void WriteRegionFile(const std::vector<format::FunctionRecord>& records,
                     const format::ExternalRegion& region, const std::string& path);

// save_weights: write `records`' bound tensors (function "" is main) to `path`, 64-byte aligned,
// keyed by Keys, with bindings, hashes and ties in `__metadata__`; then `compiled` values (checked
// against `model`) under their names, and `model`'s other tie names. \throws ValueError for no
// tensors or a compiled value not the code's; RuntimeError naming the file and the error.
void SaveWeights(std::vector<format::FunctionRecord> records, const ModelRecord& model,
                 const std::string& path, const ffi::Map<ffi::String, ffi::Tensor>& compiled);

}  // namespace weights
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_STORAGE_WEIGHTS_FILE_H_
