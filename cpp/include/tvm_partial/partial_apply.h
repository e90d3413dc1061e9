// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file tvm_partial/partial_apply.h
 * \brief Partial application of TVM runtime functions and modules.
 *
 * A partial function holds constant arguments (tensors, scalars, strings, None) by position; the
 * caller's arguments fill the free positions in order: `PartialApply(f, {{1, w}, {2, b}})(x, out)`
 * calls `f(x, w, b, out)`. A partial module wraps a module with bindings for some of its
 * functions; `export_library` saves it with that module, and loading it restores every constant.
 */
#ifndef TVM_PARTIAL_PARTIAL_APPLY_H_
#define TVM_PARTIAL_PARTIAL_APPLY_H_

#include <tvm/ffi/any.h>
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/container/shape.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/extra/module.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <cstdint>
#include <string>
#include <vector>

#define TVM_PARTIAL_API __attribute__((visibility("default")))

namespace tvm_partial {

namespace ffi = ::tvm::ffi;

/*! \brief Positions in the wrapped function's full argument list -> bound values. */
using Bindings = ffi::Map<int64_t, ffi::Any>;

/*!
 * \brief Bind constant arguments of `f` by position.
 * \param f The function to wrap; a partial `f` is flattened (bindings merged): one hop per call.
 * \param bound Positions (>= 0) in `f`'s argument list -> values, held by reference.
 * \param name The function's name in error messages ("main() takes ...").
 * \param param_names Every parameter of `f`, bound ones included, to check the argument count and
 *        name the free parameters. Empty: unknown.
 * \return A new function taking the free arguments, in order.
 * \throws ValueError / IndexError naming the offending position.
 */
TVM_PARTIAL_API ffi::Function PartialApply(ffi::Function f, Bindings bound,
                                           ffi::String name = ffi::String(),
                                           ffi::Array<ffi::String> param_names = {});

/*! \brief An output's dimension: static, or an argument's axis (a TIR shape variable like `n`). */
struct OutputDim {
  int64_t arg = -1;   // position in the wrapped function's argument list, or -1: static
  int64_t value = 0;  // the static extent, or the axis of argument `arg`
  static OutputDim Static(int64_t extent) { return OutputDim{-1, extent}; }
  static OutputDim Of(int64_t arg, int64_t axis) { return OutputDim{arg, axis}; }
};

/*! \brief A parameter that the partial allocates on each call and returns. */
struct Output {
  int64_t position;  // in the wrapped function's argument list (like Bindings)
  DLDataType dtype;
  std::vector<OutputDim> shape;
};

/*! \brief Outputs in the order the call returns them. */
using Outputs = std::vector<Output>;

/*!
 * \brief `PartialApply` for a destination-passing kernel, returning its outputs:
 * \code{.cpp}
 *   // main(data, weights, bias, result): result is allocated per call and returned
 *   ffi::Function conv = tvm_partial::PartialApply(
 *       f, {{1, w}, {2, b}}, "main", {"data", "weights", "bias", "result"},
 *       {{3, DLDataType{kDLFloat, 32, 1}, {OutputDim::Static(1), ...}}});
 *   ffi::Tensor out = conv(x).cast<ffi::Tensor>();
 * \endcode
 * Each call allocates every output (contiguous, 64-byte aligned, on the device of the call's
 * first tensor argument, else of the first bound tensor, else the CPU), calls `f` with them at
 * their positions, and returns the output (one) or an `ffi::Array<ffi::Tensor>` in the order of
 * `outputs` (several). Positions count as for `bound` (for a partial `f`, in its arguments).
 * \throws ValueError / IndexError for an output position that is bound, repeated or past the
 *         parameters, and for a dimension that refers to a bound or missing argument.
 */
TVM_PARTIAL_API ffi::Function PartialApply(ffi::Function f, Bindings bound, ffi::String name,
                                           ffi::Array<ffi::String> param_names, Outputs outputs);

/*!
 * \brief Wrap `mod` (compiled library, partial module (merged into one level), ...) with bindings
 *        for some of its functions. `GetFunction(name)` returns the bound closure for names in
 *        `bindings` (built once, cached) and forwards other names to `mod`, searching its imports.
 *        `GetFunction("main")` (Python's `pm(...)`) on code without `main` returns the only bound
 *        function (a `frontend.nn` model's `forward`), or throws AttributeError naming several.
 * \param bindings Function name -> positions -> values.
 * \param param_names Function name -> every parameter name of that function, when known.
 */
TVM_PARTIAL_API ffi::Module PartialApplyModule(
    ffi::Module mod, ffi::Map<ffi::String, Bindings> bindings,
    ffi::Map<ffi::String, ffi::Array<ffi::String>> param_names = {});

/*! \brief What a partial function (key "") or a partial module (per function) holds: its bindings,
 *         its recorded parameter names (functions without are absent), its outputs (functions
 *         with outputs only). \throws TypeError when `obj` is neither. */
TVM_PARTIAL_API ffi::Map<ffi::String, Bindings> PartialApplyBindings(const ffi::Any& obj);
TVM_PARTIAL_API ffi::Map<ffi::String, ffi::Array<ffi::String>> PartialApplyParamNames(
    const ffi::Any& obj);
TVM_PARTIAL_API ffi::Map<ffi::String, ffi::Array<ffi::Any>> PartialApplyOutputs(
    const ffi::Any& obj);

/*! \brief An uninitialised contiguous tensor, data 64-byte aligned (TVM kernels assume it), in host
 *         memory or, through the TVM runtime, on a device. */
TVM_PARTIAL_API ffi::Tensor AlignedEmpty(ffi::Shape shape, DLDataType dtype, DLDevice device);

/*! \brief A contiguous, 64-byte-aligned copy of `src` (any strides) on `device`; how bind converts
 *         values that are not yet suitable tensors. */
TVM_PARTIAL_API ffi::Tensor AlignedCopy(const ffi::Tensor& src, DLDevice device);

/*!
 * \brief Load an artifact with the tensors of another safetensors weights file bound in place of
 *        its own (Python: `tvm_partial.load(library, weights_file=...)`):
 *        `LoadWithWeights("model.so", "v2.safetensors")` runs the artifact's code on v2's weights.
 *
 * Each tensor the artifact binds is taken from `weights_file` by key (`main/weights`, or `main/1`
 * without a recorded parameter name), with the same dtype and shape; the file holds nothing else.
 * It is mapped privately: 64-byte-aligned host tensors view it, others are copied once (to their
 * device). Neither the artifact's payloads nor the weights file it records are read (that one
 * may be absent). Bound scalars and strings are kept.
 * \param library The artifact (relative paths: from the working directory).
 * \param weights_file A safetensors file, such as `tvm_partial.save_weights` writes.
 * \throws FileNotFoundError when `weights_file` does not exist; ValueError naming the file and the
 *         tensor when it is damaged or holds the weights of another model, or when `library`
 *         holds no partial module.
 */
TVM_PARTIAL_API ffi::Module LoadWithWeights(const std::string& library,
                                            const std::string& weights_file);

/*!
 * \brief Load rank `rank`'s view of an artifact bound with tensor-parallel shards
 *        (`partial(..., shards={"w": 0}, world=2)`): `LoadShard("model.so", rank, 2)`. Python:
 *        `tvm_partial.load(library, shard=(rank, world))`; on a disco worker, the global
 *        `tvm_partial.LoadShard(path)` reads rank, world and device from
 *        `runtime.disco.worker_rank`, `runtime.disco.world_size` and `runtime.disco.device`.
 *
 * Each sharded tensor becomes its rank's slice along the recorded dimension (one contiguous,
 * 64-byte-aligned byte range), a view of a private mapping of its file: pages are read when the
 * kernel touches them (devices: the slice is copied there). Tensors without a shard record are
 * bound whole on every rank.
 * \param weights_file Optional: take the whole tensors from this safetensors file by key, as
 *        LoadWithWeights does, then slice them.
 * \param device Optional: the rank's device. Tensors bound on a device of its type (cuda:0 at
 *        bind time) go there instead (cuda:rank), as does a Relax model's VirtualMachine. CPU
 *        (the default) leaves every device as recorded.
 * \throws ValueError when `rank` is not below `world`, when the artifact records no shards, or
 *         when its shards name another world.
 */
TVM_PARTIAL_API ffi::Module LoadShard(const std::string& library, int64_t rank, int64_t world,
                                      const std::string& weights_file = "",
                                      DLDevice device = {kDLCPU, 0});

/*!
 * \brief Python's `tvm_partial.rebind(pm, values, function=...)`: a new partial module over the
 *        same code with `values` (keys: positions, or recorded parameter names) replacing those
 *        bound in `function`, each of the kind it replaces: a tensor of the same dtype, shape and
 *        device (copied into 64-byte-aligned memory there if not so already), or a scalar. A
 *        tensor bound in several places (tied) is replaced in each.
 * \throws TypeError / IndexError / KeyError naming the function and the position or name.
 */
TVM_PARTIAL_API ffi::Module Rebind(const ffi::Module& pm, const ffi::String& function,
                                   const ffi::Map<ffi::Any, ffi::Any>& values);

/*!
 * \brief Python's `tvm_partial.inspect(path)` and `verify(path)`, the same dictionaries (keys in
 *        docs/api.md): what an artifact, save_to_bytes file, safetensors weights file or index
 *        holds, without loading it; and whether each payload matches its recorded hash
 *        (`"intact"`, `"damaged"`). An ONNX model is Python's to read (ValueError here).
 * \throws FileNotFoundError; ValueError when the file is not one of these or is damaged.
 */
TVM_PARTIAL_API ffi::Map<ffi::String, ffi::Any> Inspect(const std::string& path);
TVM_PARTIAL_API ffi::Map<ffi::String, ffi::Any> Verify(const std::string& path);

/*!
 * \brief Python's `tvm_partial.open_weights(path, function)` for a safetensors file or index:
 *        `function`'s tensors keyed by parameter name (else position), as views of a private
 *        mapping of the file; `Rebind(pm, "main", OpenWeights(path))` binds them.
 */
TVM_PARTIAL_API ffi::Map<ffi::Any, ffi::Any> OpenWeights(const std::string& path,
                                                         const ffi::String& function = "main");

}  // namespace tvm_partial

#endif  // TVM_PARTIAL_PARTIAL_APPLY_H_
