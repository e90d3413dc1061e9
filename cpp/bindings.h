// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file bindings.h
 * \brief Transitional: the bind layer lives in cpp/bind/. format.h, which another change owns,
 *        still includes this name; delete this file once it includes "bind/bindings.h".
 */
#include "bind/bindings.h"
