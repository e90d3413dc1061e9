// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file compiled_in.h
 * \brief Internal: tensors a frontend compiled into a Relax executable (a torch model's batch-norm
 *        statistics, an ONNX model's folded initializers), known by the model's names.
 *
 * A weights set is swapped by name; a value for one of these names cannot reach the code, which
 * holds its own copy. So each is recorded with its dtype, shape and hash (the format's), and a
 * value given for it is accepted only where it equals the compiled one: at bind time, and where
 * `load(path, weights_file=)` reads a file, in any process. The records travel in the
 * `partial_apply_vm` module's bytes, beside the executable they describe (relax_vm.cc).
 */
#ifndef TVM_PARTIAL_COMPILED_IN_H_
#define TVM_PARTIAL_COMPILED_IN_H_

#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/extra/module.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tvm_partial {

namespace ffi = ::tvm::ffi;

/*! \brief A tensor compiled into the code, by the model's name. */
struct CompiledIn {
  std::string name;
  DLDataType dtype;
  std::vector<int64_t> shape;
  uint64_t hash;
  /*! \brief The model holds it, the code never reads it (a batch norm's num_batches_tracked in
   *         eval mode): any value given for it is taken, and changes nothing. */
  bool unused = false;
};

/*! \brief The record of `tensor` under `name` (its bytes hashed on the host). */
CompiledIn RecordCompiledIn(const std::string& name, const ffi::Tensor& tensor);

/*!
 * \brief "" when a value of `dtype`, `shape` and payload hash `hash` is the compiled one; else
 *        why it cannot be taken and what to do (the caller names the tensor).
 */
std::string CompiledInProblem(const CompiledIn& compiled, DLDataType dtype,
                              const std::vector<int64_t>& shape, uint64_t hash);

/*!
 * \brief Whether the Relax executable `executable` holds a constant of `compiled`'s dtype, byte
 *        size and hash: proof that a value a program says its frontend compiled in is the one
 *        the code holds (shapes may differ: the compiler folds reshapes into constants). Its
 *        constants are read from its own serialised bytes, each a tensor record as TVM writes
 *        it (magic 0xDD5E40F096B4A13F, device, ndim, dtype, shape, byte size, data),
 * bounds-checked.
 */
bool ExecutableHolds(const ffi::Module& executable, const CompiledIn& compiled);

/*! \brief The records of `mod` when it is a `partial_apply_vm` module of this library or wraps
 *         one (a partial module over it), else none. */
std::vector<CompiledIn> CompiledInOf(const ffi::Module& mod);

/*! \brief Append the records to `out`: u32 count, per record str name | str dtype | u32 ndim |
 *         i64 shape[ndim] | u64 hash | u8 unused (0 or 1) (str = u32 length + UTF-8). */
void WriteCompiledIn(const std::vector<CompiledIn>& records, std::string* out);

/*!
 * \brief Read records written by WriteCompiledIn from `data[*at, size)`, advancing `*at`; each
 *        read bounds-checked, names unique and valid UTF-8, dtypes known, shapes sane.
 * \throws ValueError starting with `who` for anything else.
 */
std::vector<CompiledIn> ReadCompiledIn(const unsigned char* data, size_t size, size_t* at,
                                       const char* who);

}  // namespace tvm_partial

#endif  // TVM_PARTIAL_COMPILED_IN_H_
