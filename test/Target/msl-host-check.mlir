// Every kernel of a module, printed into one file, must compile as MSL
// against the host stand-in for metal_stdlib (test/msl-host), and as host
// C++ against the CPU prelude. Each emitter test does the same for its own
// kernels; this one puts a representative set side by side in one file.
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal
// RUN: %check_msl %t.metal | FileCheck %s --check-prefix=CHECKER
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp
// RUN: %host_cxx_syntax %t.cpp
// RUN: FileCheck %s --input-file=%t.metal --check-prefix=MSL

// CHECKER: 1 passed, 0 failed

// MSL-COUNT-4: kernel void enigma_kernel_

enigma.kernel @saxpy(%x: memref<?xf32, #enigma.address_space<constant>> {enigma.name = "x", enigma.dtype = "f32"},
                     %y: memref<?xf32, #enigma.address_space<device>> {enigma.name = "y", enigma.dtype = "f32"},
                     %a: f32 {enigma.name = "a", enigma.dtype = "f32"},
                     %n: i32 {enigma.name = "n", enigma.dtype = "u32"}) {
  %tid = enigma.thread_position_in_grid <x>
  %in = arith.cmpi ult, %tid, %n : i32
  scf.if %in {
    %i = arith.index_castui %tid : i32 to index
    %xv = memref.load %x[%i] : memref<?xf32, #enigma.address_space<constant>>
    %yv = memref.load %y[%i] : memref<?xf32, #enigma.address_space<device>>
    %r = math.fma %a, %xv, %yv : f32
    memref.store %r, %y[%i] : memref<?xf32, #enigma.address_space<device>>
  }
  enigma.return
}

enigma.kernel @histogram_like(%data: memref<?xi8> {enigma.name = "data", enigma.dtype = "u8"},
                              %out: memref<?xi32> {enigma.name = "out", enigma.dtype = "i32"}) {
  %lid = enigma.thread_index_in_threadgroup
  %lane = enigma.thread_index_in_simdgroup
  %sg = enigma.simdgroup_index_in_threadgroup
  %i = arith.index_castui %lid : i32 to index
  %b = memref.load %data[%i] : memref<?xi8>
  %w = arith.extui %b : i8 to i32
  %sh = arith.shli %w, %lane : i32
  %neg = arith.subi %sg, %sh : i32
  %d = arith.divsi %neg, %lane : i32
  enigma.barrier <threadgroup>
  memref.store %d, %out[%i] : memref<?xi32>
  enigma.return
}

enigma.kernel @half_reduce(%h: memref<?xf16> {enigma.name = "h", enigma.dtype = "f16"},
                           %o: memref<?xbf16> {enigma.name = "o", enigma.dtype = "bf16"},
                           %n: i32 {enigma.name = "n", enigma.dtype = "i32"}) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %z = arith.constant 0.0 : f16
  %ninf = arith.constant 0xFC00 : f16
  %s:2 = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %z, %mx = %ninf) -> (f16, f16) : i32 {
    %i = arith.index_cast %k : i32 to index
    %v = memref.load %h[%i] : memref<?xf16>
    %a = arith.addf %acc, %v : f16
    %m = arith.maxnumf %mx, %v : f16
    %nan = arith.cmpf uno, %v, %v : f16
    %keep = arith.select %nan, %acc, %a : f16
    scf.yield %keep, %m : f16, f16
  }
  %f = arith.extf %s#0 : f16 to f32
  %g = arith.negf %ninf : f16
  %gf = arith.extf %g : f16 to f32
  %t = arith.addf %f, %gf : f32
  %b = arith.truncf %t : f32 to bf16
  %c0i = arith.constant 0 : index
  memref.store %b, %o[%c0i] : memref<?xbf16>
  enigma.return
}

enigma.kernel @bits(%x: memref<?xi64> {enigma.name = "x", enigma.dtype = "u64"},
                    %f: memref<?xf32> {enigma.name = "f", enigma.dtype = "f32"}) {
  %g = enigma.threadgroup_position_in_grid <y>
  %i = arith.index_castui %g : i32 to index
  %v = memref.load %x[%i] : memref<?xi64>
  %p = math.ctpop %v : i64
  %t = arith.trunci %p : i64 to i32
  %fl = arith.bitcast %t : i32 to f32
  %m = arith.constant -0.0 : f32
  %n = arith.negf %m : f32
  %r = arith.addf %fl, %n : f32
  memref.store %r, %f[%i] : memref<?xf32>
  enigma.return
}
