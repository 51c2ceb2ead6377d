// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// register_tensor: a per-thread array in the thread address space is a local
// array, indexed by constants (memref.alloca: the kernel op is an
// AutomaticAllocationScope).

// CHECK-LABEL: enigma_kernel_regs(
// CHECK: float [[R:v[0-9]+]][4];
// CHECK-NEXT: [[R]][0ul] = 0.0f;
// CHECK-NEXT: [[R]][3ul] = 2.5f;
// CHECK-NEXT: float [[V:v[0-9]+]] = [[R]][3ul];
// CHECK-NEXT: out[0ul] = [[V]];
enigma.kernel @regs(%out: memref<?xf32> {enigma.name = "out"}) {
  %r = memref.alloca() : memref<4xf32, #enigma.address_space<thread>>
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %zero = arith.constant 0.0 : f32
  %x = arith.constant 2.5 : f32
  memref.store %zero, %r[%c0] : memref<4xf32, #enigma.address_space<thread>>
  memref.store %x, %r[%c3] : memref<4xf32, #enigma.address_space<thread>>
  %v = memref.load %r[%c3] : memref<4xf32, #enigma.address_space<thread>>
  memref.store %v, %out[%c0] : memref<?xf32>
  enigma.return
}

// CHECK-NOT: <unnamed value>
