// RUN: enigma-opt %s --enigma-bounds-check | FileCheck %s
// RUN: enigma-opt %s --enigma-bounds-check | enigma-translate --enigma-to-cpp -o %t.cpp && %host_cxx_syntax %t.cpp

// The fragment ops are not checked: a gather (one memref, one index
// operand, and a fragment of indices) is no scalar access at its offset,
// so it stays as it is; the scalar load beside it is guarded.

// CHECK-LABEL: enigma.kernel @gather_beside_a_load(
// CHECK-SAME: {access = "load", buffer = "A"
// CHECK-NOT: access = "mma_gather"
// CHECK: scf.if
// CHECK: memref.load %{{.*}}[%{{.*}}]
// CHECK: enigma.mma_gather %{{.*}}[%{{.*}} + %{{.*}}]
// CHECK-NOT: scf.yield %{{.*}} : tensor
enigma.kernel @gather_beside_a_load(%A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A"},
                                    %O: memref<?xf32, #enigma.address_space<device>> {enigma.name = "O"}) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %x = memref.load %A[%c16] : memref<?xf32, #enigma.address_space<device>>
  %i = enigma.mma_iota 1 : tensor<16x16xi32>
  %f = enigma.mma_gather %A[%c0 + %i] : memref<?xf32, #enigma.address_space<device>>, tensor<16x16xi32> -> tensor<16x16xf32>
  %g = arith.addf %f, %f : tensor<16x16xf32>
  enigma.mma_store %g, %O[%c0], %c16 : tensor<16x16xf32>, memref<?xf32, #enigma.address_space<device>>
  memref.store %x, %O[%c0] : memref<?xf32, #enigma.address_space<device>>
  enigma.return
}
