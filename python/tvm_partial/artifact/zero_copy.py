# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Zero-copy exports: tensor payloads appended to the artifact's file, mapped at load time.

The payloads leave the bytes TVM embeds for the module (which its loader copies twice more). Once
the library is linked, the region (its 64-byte header and the payloads) is appended to the file
in one sequential write, at a 64 KiB-aligned offset, followed by a 64-byte trailer that locates
it (cpp/storage/appended_region.h); the metadata records the region's size and a random link
number that its header repeats. Loading maps the region privately from the very file the
library was loaded from (cpp/storage/loaded_library.h), so loading reads nothing, pages are read
when a kernel first touches them, and writes (a bound output buffer, an in-place weight update)
go to private copy-on-write pages: the file never changes.

C++ does it in two calls around TVM's ``export_library``: ``tvm_partial.ExternalPayloads``, the
module whose bytes leave the payloads out (linked with zeros for their hashes), and
``tvm_partial.WritePayloads``, which appends the region, hashing it as it is written, and writes
the hashes over those zeros (or writes a weights file).
"""

from __future__ import annotations

#: Exports whose constants reach this many bytes go zero-copy unless told otherwise.
THRESHOLD_BYTES = 16 * 2**20
