// RUN: enigma-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// What stays uniform next to the sources that vary: an atomic load of
// memory no op of the kernel writes atomically, min / max of a uniform value
// over a simdgroup, a simd sum at simdgroup scope, a register array that
// holds only uniform values, and threadgroup memory read after a barrier.

// CHECK-LABEL: enigma.kernel @uniform_sources
enigma.kernel @uniform_sources(%A: memref<?xi32> {enigma.name = "A"}, %x: i32 {enigma.name = "x"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %four = arith.constant 4 : i32
  %l = enigma.atomic_load %A[%c0] relaxed : memref<?xi32>
  %c1c = arith.cmpi ult, %l, %four : i32
  scf.if %c1c {
    enigma.barrier <threadgroup>
  }
  %m = enigma.simd_max %x : i32
  %c2c = arith.cmpi ult, %m, %four : i32
  scf.if %c2c {
    enigma.barrier <threadgroup>
  }
  %s = enigma.simd_sum %x : i32
  %c3c = arith.cmpi ult, %s, %four : i32
  scf.if %c3c {
    %t = enigma.simd_min %x : i32
  }
  %r = memref.alloca() : memref<2xi32, #enigma.address_space<thread>>
  memref.store %x, %r[%c1] : memref<2xi32, #enigma.address_space<thread>>
  %v = memref.load %r[%c1] : memref<2xi32, #enigma.address_space<thread>>
  %c4c = arith.cmpi ult, %v, %four : i32
  scf.if %c4c {
    enigma.barrier <threadgroup>
  }
  %tg = enigma.threadgroup_alloc {enigma.dtype = "i32"} : memref<4xi32, #enigma.address_space<threadgroup>>
  %tid = enigma.thread_index_in_threadgroup
  %ti = arith.index_castui %tid : i32 to index
  %w = arith.constant 3 : index
  %slot = arith.remui %ti, %w : index
  memref.store %tid, %tg[%slot] : memref<4xi32, #enigma.address_space<threadgroup>>
  enigma.barrier <threadgroup>
  %u = memref.load %tg[%c0] : memref<4xi32, #enigma.address_space<threadgroup>>
  %c5c = arith.cmpi ult, %u, %four : i32
  scf.if %c5c {
    enigma.barrier <threadgroup>
  }
  enigma.return
}
