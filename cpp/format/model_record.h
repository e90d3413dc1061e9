// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file format/model_record.h
 * \brief Internal: an imported Relax executable's record, by the model's names, of the tensors its
 *        frontend compiled into the code and of tied weights.
 *
 * A value given for a compiled-in name cannot reach the code (it holds its own copy): each is
 * recorded (dtype, shape, format hash) and a given value accepted only if equal. The record travels
 * in the `partial_apply_vm` module's bytes (relax_vm.cc).
 */
#ifndef TVM_PARTIAL_FORMAT_MODEL_RECORD_H_
#define TVM_PARTIAL_FORMAT_MODEL_RECORD_H_

#include <tvm/ffi/container/map.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/string.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tvm_partial {

namespace ffi = ::tvm::ffi;

/*! \brief A tensor the code holds a value of, by the model's name. */
struct CompiledIn {
  enum Kind : uint8_t {
    kCompiled = 0,  // in the code, not a parameter: a value given must be this one, then dropped
    kUnused = 1,    // the model holds it, the code never reads it: any value is taken and dropped
    kPinned = 2,    // a parameter whose value the frontend also read at import: must be this one
    kRead = 3,      // read at import and folded into the code, not a parameter: as kCompiled
  };
  std::string name;
  DLDataType dtype;
  std::vector<int64_t> shape;
  uint64_t hash;
  Kind kind = kCompiled;
};

/*! \brief What an executable knows by the model's names. */
struct ModelRecord {
  std::string what;  // "the ExportedProgram", "the ONNX model", "the model": for messages
  std::vector<CompiledIn> compiled_in;
  std::vector<std::vector<std::string>> ties;  // names that are one tensor, in the model's order

  const CompiledIn* Find(const std::string& name) const;
  const std::vector<std::string>* TieOf(const std::string& name) const;
};

/*! \brief The record of `tensor` under `name` (its bytes hashed on the host). */
CompiledIn RecordCompiledIn(const std::string& name, const ffi::Tensor& tensor);

/*! \brief "" when a value of `dtype`, `shape` and payload hash `hash` can be given for `compiled`
 *         (it is the compiled one, or the name is unused); else why not and what to do. */
std::string CompiledInProblem(const CompiledIn& compiled, DLDataType dtype,
                              const std::vector<int64_t>& shape, uint64_t hash);

// Settle values given by name: parameter -> the given name it takes. Compiled-in values checked,
// dropped; unused dropped; pinned checked, kept; unknown kept; a tie's values must be one (same
// object, or dtype, shape, bits), going to each tied name in `params`. A tensor on its `sources`
// entry's memory is equal unhashed. \throws ValueError / TypeError "cannot bind 'NAME': ...".
ffi::Map<ffi::String, ffi::String> SettleNames(
    const ModelRecord& record, const std::vector<std::string>& params,
    const ffi::Map<ffi::String, ffi::Any>& given,
    const ffi::Map<ffi::String, ffi::Tensor>& sources = {});

// Whether executable bytes hold a constant per `wanted` by dtype, byte size, hash (not shape: the
// compiler folds reshapes), else the first missing in `*missing`; found by magic, bounds-checked.
bool BytesHoldTensor(const ffi::Bytes& executable_bytes, const std::vector<CompiledIn>& wanted,
                     std::string* missing);

/*! \brief Append the record to `out`: str what | u32 count, per compiled-in str name | str dtype
 *         | u32 ndim | i64 shape[ndim] | u64 hash | u8 kind | u32 tie count, per tie u32 n | str
 *         name[n] (str = u32 length + UTF-8). */
void WriteModelRecord(const ModelRecord& record, std::string* out);

// Read a WriteModelRecord record from `data[*at, size)`, advancing `*at`. \throws ValueError
// starting with `who` unless bounded, names unique and UTF-8, dtypes known, shapes sane.
ModelRecord ReadModelRecord(const unsigned char* data, size_t size, size_t* at, const char* who);

}  // namespace tvm_partial

#endif  // TVM_PARTIAL_FORMAT_MODEL_RECORD_H_
