//===- metal_semantics.h - Metal value semantics, every target -*- C++ -*-===//
//
// Header-only implementation of the value-level part of Metal's standard
// library (scalar and vector types, half/bfloat, math, integer, geometry,
// matrices, packing, as_type) in namespace `metal`, compiled unchanged for
// the host (GCC, Clang; C++17) and for CUDA devices through NVRTC. It backs
// the host C++ of Enigma's CPU backend, Enigma's CUDA prelude, and the
// host stand-in of metal_stdlib. Under CUDA, include cuda_fp16.h /
// cuda_bf16.h first to have half / bfloat. See
// docs/design/semantics-library.md.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_METAL_SEMANTICS_H
#define ENIGMA_METAL_SEMANTICS_H

#include "metal_platform.h"
#include "metal_types.h"
#include "metal_vector.h"
#include "metal_math.h"
#include "metal_integer.h"
#include "metal_elementwise.h"
#include "metal_geometry.h"
#include "metal_matrix.h"
#include "metal_pack.h"
#include "metal_constants.h"

#endif // ENIGMA_METAL_SEMANTICS_H
