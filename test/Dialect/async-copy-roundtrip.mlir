// RUN: enigma-opt %s | enigma-opt | FileCheck %s
// RUN: enigma-opt %s --enigma-optimize | FileCheck %s --check-prefix=OPT

// Simdgroup async copies print and parse back; the optimizer keeps them
// (they write memory) and their waits (they order memory), even when no one
// reads an event.

// CHECK-LABEL: enigma.kernel @copies
// CHECK: %[[E0:.*]] = enigma.async_copy_1d_d2t %{{.*}}[%{{.*}}], %{{.*}}[%{{.*}}], %{{.*}} : memref<64xf32, #enigma.address_space<threadgroup>>, memref<?xf32, #enigma.address_space<device>>
// CHECK: %[[E1:.*]] = enigma.async_copy_2d_d2t %{{.*}}[%{{.*}}], %{{.*}}, %{{.*}}[%{{.*}}], %{{.*}}, %{{.*}} x %{{.*}} : memref<64xf32, #enigma.address_space<threadgroup>>, memref<?xf32, #enigma.address_space<device>>
// CHECK: enigma.async_copy_wait %[[E0]], %[[E1]]
// CHECK: enigma.async_copy_1d_t2d %{{.*}}[%{{.*}}], %{{.*}}[%{{.*}}], %{{.*}} : memref<?xf32, #enigma.address_space<device>>, memref<64xf32, #enigma.address_space<threadgroup>>
// CHECK: enigma.async_copy_2d_t2d
// CHECK: enigma.async_copy_wait
// CHECK-LABEL: enigma.kernel @carried
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (!enigma.async_event)

// OPT-LABEL: enigma.kernel @copies
// OPT-COUNT-2: enigma.async_copy_{{1d|2d}}_d2t
// OPT: enigma.async_copy_wait
// OPT: enigma.async_copy_1d_t2d
// OPT: enigma.async_copy_2d_t2d
// OPT: enigma.async_copy_wait
// OPT-LABEL: enigma.kernel @unwaited
// OPT: enigma.async_copy_1d_t2d

enigma.kernel @copies(
    %A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "f32"},
    %B: memref<?xf32, #enigma.address_space<device>> {enigma.name = "B", enigma.dtype = "f32"}) {
  %t = enigma.threadgroup_alloc {enigma.dtype = "f32"} : memref<64xf32, #enigma.address_space<threadgroup>>
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %sg = enigma.simdgroup_index_in_threadgroup
  %z = arith.constant 0 : i32
  %first = arith.cmpi eq, %sg, %z : i32
  scf.if %first {
    %e0 = enigma.async_copy_1d_d2t %t[%c0], %A[%c8], %c64 : memref<64xf32, #enigma.address_space<threadgroup>>, memref<?xf32, #enigma.address_space<device>>
    %e1 = enigma.async_copy_2d_d2t %t[%c0], %c8, %A[%c0], %c64, %c8 x %c8 : memref<64xf32, #enigma.address_space<threadgroup>>, memref<?xf32, #enigma.address_space<device>>
    enigma.async_copy_wait %e0, %e1
  }
  enigma.barrier <threadgroup>
  %e2 = enigma.async_copy_1d_t2d %B[%c0], %t[%c0], %c64 : memref<?xf32, #enigma.address_space<device>>, memref<64xf32, #enigma.address_space<threadgroup>>
  %e3 = enigma.async_copy_2d_t2d %B[%c8], %c64, %t[%c0], %c8, %c8 x %c8 : memref<?xf32, #enigma.address_space<device>>, memref<64xf32, #enigma.address_space<threadgroup>>
  enigma.async_copy_wait %e2, %e3
  enigma.return
}

// An event carried by a loop: the copy of the next chunk is issued before
// the current one is waited for.
enigma.kernel @carried(
    %A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "f32"}) {
  %t = enigma.threadgroup_alloc {enigma.dtype = "f32"} : memref<64xf32, #enigma.address_space<threadgroup>>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  %first = enigma.async_copy_1d_d2t %t[%c0], %A[%c0], %c32 : memref<64xf32, #enigma.address_space<threadgroup>>, memref<?xf32, #enigma.address_space<device>>
  %last = scf.for %i = %c1 to %c4 step %c1 iter_args(%pending = %first) -> (!enigma.async_event) {
    %off = arith.muli %i, %c32 : index
    %next = enigma.async_copy_1d_d2t %t[%c32], %A[%off], %c32 : memref<64xf32, #enigma.address_space<threadgroup>>, memref<?xf32, #enigma.address_space<device>>
    enigma.async_copy_wait %pending
    scf.yield %next : !enigma.async_event
  }
  enigma.async_copy_wait %last
  enigma.return
}

// A copy whose event nobody waits for still writes its destination.
enigma.kernel @unwaited(
    %B: memref<?xf32, #enigma.address_space<device>> {enigma.name = "B", enigma.dtype = "f32"}) {
  %t = enigma.threadgroup_alloc {enigma.dtype = "f32"} : memref<64xf32, #enigma.address_space<threadgroup>>
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %e = enigma.async_copy_1d_t2d %B[%c0], %t[%c0], %c64 : memref<?xf32, #enigma.address_space<device>>, memref<64xf32, #enigma.address_space<threadgroup>>
  enigma.return
}
