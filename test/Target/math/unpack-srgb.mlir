// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp
// RUN: enigma-opt %s | enigma-opt | FileCheck %s --check-prefix=ROUND

// enigma.unpack_unorm4x8_srgb is Metal's unpack_unorm4x8_srgb_to_float: MSL
// calls the standard library, CUDA and host C++ the Metal semantics library
// (metal_pack.h), all under the Metal name.

// CHECK-LABEL: enigma_kernel_unpack_srgb(
// CHECK: uint [[P:v[0-9]+]] = p[
// CHECK-NEXT: float4 [[V:v[0-9]+]] = unpack_unorm4x8_srgb_to_float([[P]]);
// CHECK-NEXT: float {{v[0-9]+}} = [[V]].x;
// ROUND-LABEL: enigma.kernel @unpack_srgb
// ROUND: enigma.unpack_unorm4x8_srgb %{{.*}} : vector<4xf32>
enigma.kernel @unpack_srgb(%p: memref<?xi32> {enigma.name = "p"}, %o: memref<?xf32> {enigma.name = "o"}) {
  %c0 = arith.constant 0 : index
  %w = memref.load %p[%c0] : memref<?xi32>
  %v = enigma.unpack_unorm4x8_srgb %w : vector<4xf32>
  %r = vector.extract %v[0] : f32 from vector<4xf32>
  memref.store %r, %o[%c0] : memref<?xf32>
  enigma.return
}
