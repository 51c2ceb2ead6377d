// RUN: enigma-opt %s | enigma-opt | FileCheck %s
// RUN: enigma-opt %s --mlir-print-op-generic | enigma-opt | FileCheck %s

// The address space attribute prints the same way it parses, for all four
// spaces; threadgroup and thread memrefs are legal as values inside a
// module (just not as kernel parameters).

// CHECK: memref.global "private" @tg : memref<4xf32, #enigma.address_space<threadgroup>>
// CHECK: memref.global "private" @th : memref<4xf32, #enigma.address_space<thread>>
memref.global "private" @tg : memref<4xf32, #enigma.address_space<threadgroup>>
memref.global "private" @th : memref<4xf32, #enigma.address_space<thread>>

// CHECK-LABEL: enigma.kernel @spaces(
// CHECK-SAME: memref<?xi32, #enigma.address_space<device>>
// CHECK-SAME: memref<?xi32, #enigma.address_space<constant>>
enigma.kernel @spaces(%d: memref<?xi32, #enigma.address_space<device>>,
                      %c: memref<?xi32, #enigma.address_space<constant>>) {
  enigma.return
}
