// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/weights_file.h
 * \brief Internal: safetensors weights files, the one reader of their header (every tool of
 *        tvm-partial that opens one goes through `Open`) and the rule that names bound tensors.
 *
 * A safetensors file is a u64 header length, a JSON header (`{key: {"dtype", "shape",
 * "data_offsets": [begin, end]}}`, offsets counting from the end of the header, and an optional
 * `"__metadata__"` object of strings), then the data. The header is checked before it is
 * trusted: at most kMaxHeader bytes, UTF-8, nested at most kMaxDepth deep (the JSON parser
 * recurses, so depth is bounded before it runs), each entry's dtype, shape and offsets inside
 * the data, no two tensors overlapping.
 *
 * Keys of the tensors tvm-partial writes (`Keys`) are the parameter's own name (`fc1.weight`,
 * as a state_dict names it) where no bound tensor of another function has that name;
 * `FUNCTION/PARAMETER` (`main/weights`) where one does; `FUNCTION/POSITION` (`main/1`) where the
 * parameter has no recorded, unique name. A key without a `/` (a file another tool wrote) names
 * a parameter of any bound function where that name is unique. A tensor bound in several places
 * is stored once, under the key of its first place; `__metadata__` records every place
 * (`tvm_partial.bindings`) and which stored key each other place reads (`tvm_partial.shared`).
 * Entries `__padding__/N` (gaps kept so every payload lies at a multiple of 64) and
 * `__tvm_partial_region__` (the region header of an artifact exported with `weights_file=`)
 * are not tensors anyone binds.
 */
#ifndef TVM_PARTIAL_STORAGE_WEIGHTS_FILE_H_
#define TVM_PARTIAL_STORAGE_WEIGHTS_FILE_H_

#include <tvm/ffi/container/array.h>
#include <tvm/ffi/extra/json.h>
#include <tvm/ffi/extra/module.h>
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

/*! \brief The largest JSON header read (the safetensors package's own limit). */
constexpr uint64_t kMaxHeader = 100u << 20;
/*! \brief The deepest nesting of a header accepted: the header object, an entry, its shape. */
constexpr int kMaxDepth = 8;
constexpr const char kPaddingPrefix[] = "__padding__/";
constexpr const char kRegionKey[] = "__tvm_partial_region__";
constexpr const char kMetadataFormat[] = "tvm_partial.format";
constexpr const char kMetadataBindings[] = "tvm_partial.bindings";
constexpr const char kMetadataHashes[] = "tvm_partial.hashes";
constexpr const char kMetadataShared[] = "tvm_partial.shared";

/*! \brief A dtype both safetensors and TVM name: the safetensors code, TVM's name, bits per
 *         element (4 and 6 for F4, F6_*: packed, as both pack them). */
struct Dtype {
  const char* code;
  const char* tvm;
  uint64_t bits;
};
/*! \brief Refuse the weights file at `path`: ValueError "weights file PATH is truncated: ...",
 *         "weights file PATH lacks ...", or "weights file PATH: tensor 'k': ...". */
[[noreturn]] void Bad(const std::string& path, const std::string& what);

/*! \brief `[8, 3, 3, 3]`, as Python prints a list (for messages). */
std::string ShapeText(const std::vector<int64_t>& shape);

/*! \brief The entry for a safetensors code ("F32") or a TVM dtype ("float32"), else null. */
const Dtype* DtypeByCode(const std::string& code);
const Dtype* DtypeByTvm(const std::string& tvm);
/*! \brief "BF16, BOOL, F16, ...": the codes read, for messages. */
std::string KnownCodes();

/*! \brief A tensor entry of the header. */
struct Entry {
  const Dtype* dtype;
  std::vector<int64_t> shape;
  uint64_t begin;  // in the data
  uint64_t end;
};

/*! \brief An open weights file and its checked header. */
struct WeightsFile {
  std::shared_ptr<storage::File> file;
  uint64_t data_start = 0;  // file offset of the data (8 + header length)
  uint64_t data_size = 0;
  std::map<std::string, Entry> entries;         // every entry, padding and region included
  std::map<std::string, std::string> metadata;  // `__metadata__`, strings only
  /*! \brief Whether `key` is a tensor someone binds (not padding, not the region header). */
  static bool IsTensorKey(const std::string& key);
};

/*! \brief `text` (read from `path`) parsed as JSON when it is UTF-8 and nests at most
 *         `max_depth` deep (checked before the parser, which recurses, runs).
 *  \throws ValueError naming `path` and `what` otherwise. */
ffi::json::Value ParseJson(const std::string& path, const std::string& text, int max_depth,
                           const char* what);

/*!
 * \brief Open the safetensors file at `path` (a regular file) and check its header.
 * \throws FileNotFoundError when it does not exist; ValueError naming the file, and the tensor
 *         where one is at fault, for anything the format does not allow.
 */
WeightsFile Open(const std::string& path);

/*! \brief A tensor of a weights set: the file that holds it, and its entry there. */
struct SetEntry {
  size_t file;
  Entry entry;
};

/*!
 * \brief The weights of one safetensors file, or of a checkpoint split in several files and
 *        their index (`*.safetensors.index.json`, as transformers' `save_pretrained` writes:
 *        `{"metadata": {...}, "weight_map": {tensor: file}}`, the files beside the index).
 */
struct WeightsSet {
  std::string path;                         // the file, or the index, as given
  bool indexed = false;                     // `path` is an index
  std::vector<WeightsFile> files;           // in the order the index first names them
  std::map<std::string, SetEntry> tensors;  // every tensor key (no padding, no region header)
};

/*! \brief Whether `path` names an index (it ends in `.json`) rather than a safetensors file. */
bool IsIndex(const std::string& path);
/*! \brief Whether `path` names an ONNX model (it ends in `.onnx`): its initializers are read in
 *         Python (the onnx package), never by this reader. */
bool IsOnnx(const std::string& path);

/*!
 * \brief Open the safetensors file at `path` (a set of one), or the index at `path` and every
 *        file it names (each checked by `Open`), in the index's folder as `path` spells it (the
 *        Hugging Face cache links each file of snapshots/REV/ to its own blob). An index with
 *        no file (an empty weight_map) is refused. An index's names are resolved through its
 *        `weight_map`, which must name each tensor of each file it names, in that file: a tensor
 *        in two files, one a file lacks, a file that is missing, a file name that leaves the
 *        index's folder are refused, naming the index and the files.
 * \throws FileNotFoundError naming the index and the file it names that is missing;
 *         ValueError naming the index (or the file) otherwise.
 */
WeightsSet OpenSet(const std::string& path);

/*!
 * \brief The payload hashes recorded in `__metadata__` (`tvm_partial.hashes`: key -> 16 hex
 *        digits), or nullopt when none are recorded.
 * \throws ValueError naming the file when the record is malformed.
 */
std::optional<std::map<std::string, uint64_t>> RecordedHashes(const WeightsFile& file);

/*! \brief `[function, position]` per key as `tvm_partial.bindings` records it (may be empty):
 *         the keys of stored tensors, and of the other places of shared ones. */
std::map<std::string, std::pair<std::string, int64_t>> RecordedBindings(const WeightsFile& file);

/*! \brief `tvm_partial.shared`: the key of each place that reads the tensor stored under
 *         another key -> that key (may be empty). \throws ValueError naming the file when the
 *         record is malformed or names a tensor the file does not hold. */
std::map<std::string, std::string> RecordedShared(const WeightsFile& file);

/*! \brief A bound tensor's qualified key: `FUNCTION/PARAMETER`, or `FUNCTION/POSITION` where the
 *         name is unknown, not unique, holds a `/` or is digits. Keys() gives it where a bare name
 *         cannot stand; files of earlier versions name every tensor so (still accepted where an
 *         artifact's own weights file is checked). */
std::string QualifiedKey(const std::string& function, int64_t position,
                         const ffi::Array<ffi::String>& param_names);

/*! \brief A key read back: `FUNCTION/NAME`, `FUNCTION/POSITION` or a bare `NAME`. */
struct KeyRef {
  std::string function;  // empty for a bare name
  std::string name;      // empty when a position is given
  int64_t position = -1;
};
/*! \brief Parse `key` (ASCII digits after the `/` are a position). \throws ValueError naming the
 *         file for a position no call can reach. */
KeyRef ParseKey(const std::string& path, const std::string& key);

/*! \brief A place a tensor is bound at. */
struct Place {
  std::string function;
  int64_t position;
  const ffi::Array<ffi::String>* param_names;
};

/*! \brief A distinct bound tensor (one payload): every place it is bound at, in order, and
 *         what it is. A weights file supplies it once. */
struct Wanted {
  std::vector<Place> places;
  std::string dtype;
  std::vector<int64_t> shape;
};

/*!
 * \brief The key of each place of each tensor (`keys[i][j]`: place j of `tensors[i]`), unique
 *        across all of them; `keys[i][0]` is the key tensor i is stored under. A place's key is
 *        the parameter's name alone when it is recorded, unique in its function, holds no `/`,
 *        is not digits and is not `__metadata__`, every place of that name is a place of this
 *        tensor, and it is the first such place; else `FUNCTION/PARAMETER` (the name as above,
 *        any other function may have it); else `FUNCTION/POSITION`.
 */
std::vector<std::vector<std::string>> Keys(const std::vector<Wanted>& tensors);

/*! \brief Where a tensor's payload lies in a weights set: which file, which offset in it. */
struct Located {
  size_t file;
  uint64_t offset;
};

/*!
 * \brief Which tensor of `set` supplies each of `wanted` (its file and offset there, in order).
 * Each key of the file is resolved to one bound tensor (a `FUNCTION/...` key in its function; a
 * bare name in the one tensor bound at a parameter of that name, in any function); every tensor
 * must be supplied (a tensor bound in several places by a key of any of them; by several only
 * when they hold one dtype, shape and payload, as a cloned state_dict saves a tie), with its
 * dtype and shape, and nothing else but what the model record (`model`) names: the tensors the
 * frontend compiled into the code, each holding exactly the compiled value, and the other names
 * of a tied tensor.
 * \throws ValueError naming the file, the key and the binding otherwise (and the key scheme);
 *         for a compiled-in tensor whose value differs, why it cannot be taken.
 */
std::vector<Located> Match(const WeightsSet& set, const std::vector<Wanted>& wanted,
                           const ModelRecord& model = {});

/*! \brief The tensors a parsed blob binds, one per payload, with every place (kinds 5 and 6). */
std::vector<Wanted> WantedOf(const format::Parsed& parsed);

/*!
 * \brief Check a weights file exported with `weights_file=` against its metadata: the region
 *        header entry at data [0, 64) holding that header, and each payload of `parsed` under an
 *        entry with exactly its offsets; the data holds the whole region.
 * \throws ValueError naming the file: "was not written with this artifact", "is truncated".
 */
void CheckRegionFile(const WeightsFile& file, const format::Parsed& parsed);

/*! \brief `s` as a JSON string (quoted; `"`, `\\` and control characters escaped, nothing else:
 *         keys stay as people read them, `main/weights`). */
std::string JsonQuote(const std::string& s);

/*! \brief One entry of a header being written; `where` names its binding in messages. */
struct OutEntry {
  std::string key;
  std::string tvm_dtype;
  std::vector<int64_t> shape;
  uint64_t begin;
  uint64_t end;
  std::string where = {};
};
/*!
 * \brief The bytes before the data of a safetensors file (u64 length, JSON header padded with
 *        spaces so the data starts at a multiple of 64) holding `entries` and `metadata`; gaps
 *        between entries are filled with `__padding__/N` entries.
 * \throws TypeError naming the key, the binding and the dtype for a dtype safetensors has no
 *         code for, or a sub-byte tensor that does not fill whole bytes (which it cannot hold).
 */
std::string EncodeHeader(std::vector<OutEntry> entries,
                         const std::map<std::string, std::string>& metadata, uint64_t data_size);

/*!
 * \brief Write the safetensors file at `path` holding the payloads of `records`, whose bytes
 *        leave them to the weights file of `region` (an export with weights_file=).
 * \throws RuntimeError naming the file and the system's error.
 */
void WriteRegionFile(const std::vector<format::FunctionRecord>& records,
                     const format::ExternalRegion& region, const std::string& path);

/*!
 * \brief save_weights: write the bound tensors of `records` (a partial function's, named "",
 *        are main's) to the safetensors file at `path`, each at a multiple of 64, keyed by Keys,
 *        with their bindings, hashes and ties in `__metadata__`; then `compiled`, values the
 *        frontend compiled into the code (each checked against `model`, the record of the code)
 *        under their own names, and the other names of a tie in `model`.
 * \throws ValueError when there are no tensors, or a compiled value is not the one the code
 *         holds; RuntimeError naming the file and the system's error.
 */
void SaveWeights(std::vector<format::FunctionRecord> records, const ModelRecord& model,
                 const std::string& path, const ffi::Map<ffi::String, ffi::Tensor>& compiled);

}  // namespace weights
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_STORAGE_WEIGHTS_FILE_H_
