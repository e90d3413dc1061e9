// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file device.cc
 * \brief Names of device types (device.h).
 */
#include "device.h"

#include <sstream>
#include <string>

namespace tvm_partial {
namespace detail {

const char* DeviceName(int32_t device_type) {
  switch (device_type) {
    case kDLCPU:
      return "cpu";
    case kDLCUDA:
      return "cuda";
    case kDLCUDAHost:
      return "cuda_host";
    case kDLOpenCL:
      return "opencl";
    case kDLVulkan:
      return "vulkan";
    case kDLMetal:
      return "metal";
    case kDLROCM:
      return "rocm";
    case kDLROCMHost:
      return "rocm_host";
    case kDLCUDAManaged:
      return "cuda_managed";
    case kDLOneAPI:
      return "oneapi";
    case kDLWebGPU:
      return "webgpu";
    case kDLHexagon:
      return "hexagon";
    default:
      return nullptr;
  }
}

std::string DeviceString(int32_t device_type, int32_t device_id) {
  const char* name = DeviceName(device_type);
  std::ostringstream os;
  if (name) {
    os << name;
  } else {
    os << "device_type " << device_type;
  }
  os << ":" << device_id;
  return os.str();
}

}  // namespace detail
}  // namespace tvm_partial
