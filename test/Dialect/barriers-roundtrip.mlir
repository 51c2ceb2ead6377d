// RUN: enigma-opt %s | enigma-opt | FileCheck %s
// RUN: enigma-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC
// RUN: enigma-opt %s --mlir-print-op-generic | enigma-opt | FileCheck %s

// Barriers with every mem_flags combination; the printer puts the flags in
// a canonical order whatever order the input used.

// CHECK-LABEL: enigma.kernel @barriers()
enigma.kernel @barriers() {
  // CHECK-NEXT: enigma.barrier <none>
  // CHECK-NEXT: enigma.barrier <device>
  // CHECK-NEXT: enigma.barrier <threadgroup>
  // CHECK-NEXT: enigma.barrier <texture>
  // CHECK-NEXT: enigma.barrier <device | threadgroup>
  // CHECK-NEXT: enigma.barrier <device | texture>
  // CHECK-NEXT: enigma.barrier <threadgroup | texture>
  // CHECK-NEXT: enigma.barrier <device | threadgroup | texture>
  // CHECK-NEXT: enigma.barrier <device | threadgroup>
  enigma.barrier <none>
  enigma.barrier <device>
  enigma.barrier <threadgroup>
  enigma.barrier <texture>
  enigma.barrier <device | threadgroup>
  enigma.barrier <device | texture>
  enigma.barrier <threadgroup | texture>
  enigma.barrier <device | threadgroup | texture>
  enigma.barrier <threadgroup | device>
  // CHECK-NEXT: enigma.simd_barrier <none>
  // CHECK-NEXT: enigma.simd_barrier <device>
  // CHECK-NEXT: enigma.simd_barrier <threadgroup>
  // CHECK-NEXT: enigma.simd_barrier <texture>
  // CHECK-NEXT: enigma.simd_barrier <device | threadgroup>
  // CHECK-NEXT: enigma.simd_barrier <device | texture>
  // CHECK-NEXT: enigma.simd_barrier <threadgroup | texture>
  // CHECK-NEXT: enigma.simd_barrier <device | threadgroup | texture>
  enigma.simd_barrier <none>
  enigma.simd_barrier <device>
  enigma.simd_barrier <threadgroup>
  enigma.simd_barrier <texture>
  enigma.simd_barrier <device | threadgroup>
  enigma.simd_barrier <texture | device>
  enigma.simd_barrier <threadgroup | texture>
  enigma.simd_barrier <texture | threadgroup | device>
  // CHECK-NEXT: enigma.return
  enigma.return
}

// GENERIC: "enigma.barrier"() <{flags = #enigma.mem_flags<none>}> : () -> ()
// GENERIC: "enigma.barrier"() <{flags = #enigma.mem_flags<device>}> : () -> ()
// GENERIC: "enigma.barrier"() <{flags = #enigma.mem_flags<device | threadgroup | texture>}> : () -> ()
// GENERIC: "enigma.simd_barrier"() <{flags = #enigma.mem_flags<none>}> : () -> ()
