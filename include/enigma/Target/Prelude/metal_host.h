//===- metal_host.h - Metal's value semantics on the host -------*- C++ -*-===//
//
// The semantics library (metal_semantics.h) under the name host code has
// always included.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_METAL_HOST_H
#define ENIGMA_METAL_HOST_H

#include "metal_semantics.h"

#endif // ENIGMA_METAL_HOST_H
