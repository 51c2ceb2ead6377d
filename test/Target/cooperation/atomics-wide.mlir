// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s --check-prefix=MSL
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s --check-prefix=CUDA
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s --check-prefix=CPP
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// 64-bit atomics and float min / max. Metal's 64-bit atomics are min and
// max of ulong device memory, returning nothing: the buffer keeps its plain
// type and each atomic casts its element's address. Float min / max are
// Enigma's helper, a compare-exchange loop, printed at MSL file scope and
// in the CUDA and CPU preludes.

// MSL: inline float enigma_atomic_fetch_min_explicit(device atomic_float *p, float v, memory_order o) {
// MSL:   float old = atomic_load_explicit(p, memory_order_relaxed);
// MSL:   while (v < old && !atomic_compare_exchange_weak_explicit(p, &old, v, memory_order_relaxed, memory_order_relaxed)) {}
// MSL: inline float enigma_atomic_fetch_max_explicit(threadgroup atomic_float *p, float v, memory_order o) {
// MSL-LABEL: kernel void enigma_kernel_wide(
// MSL-NEXT: device ulong* hi {{\[\[}}buffer(0){{\]\]}}
// MSL-NEXT: device atomic_float* f {{\[\[}}buffer(1){{\]\]}}
// MSL: atomic_max_explicit((device atomic_ulong *)&hi[{{.*}}], (ulong){{v[0-9]+}}, memory_order_relaxed);
// MSL: atomic_min_explicit((device atomic_ulong *)&hi[{{.*}}], (ulong){{v[0-9]+}}, memory_order_relaxed);
// MSL: float {{v[0-9]+}} = (float)enigma_atomic_fetch_min_explicit((enigma_view_1.p + {{.*}}), (float){{v[0-9]+}}, memory_order_relaxed);
// MSL: enigma_atomic_fetch_max_explicit((enigma_view_1.p

// CUDA: atomic_fetch_max_explicit((ulong *)&hi[{{.*}}], (ulong){{v[0-9]+}}, memory_order_relaxed)
// CUDA: atomic_fetch_min_explicit((ulong *)&hi[{{.*}}], (ulong){{v[0-9]+}}, memory_order_relaxed)
// CUDA: enigma_atomic_fetch_min_explicit((float *)&f[{{.*}}], (float){{v[0-9]+}}, memory_order_acquire)

// CPP: atomic_fetch_max_explicit((ulong *)&
// CPP: enigma_atomic_fetch_min_explicit((float *)&

enigma.kernel @wide(
    %hi: memref<?xi64, #enigma.address_space<device>> {enigma.name = "hi", enigma.dtype = "u64"},
    %f: memref<?xf32, #enigma.address_space<device>> {enigma.name = "f", enigma.dtype = "f32"}) {
  %tid = enigma.thread_position_in_grid <x>
  %i = arith.index_castui %tid : i32 to index
  %w = arith.extui %tid : i32 to i64
  %0 = enigma.atomic_rmw umax %hi[%i], %w relaxed : memref<?xi64, #enigma.address_space<device>>
  %1 = enigma.atomic_rmw umin %hi[%i], %w relaxed : memref<?xi64, #enigma.address_space<device>>
  %x = arith.uitofp %tid : i32 to f32
  %old = enigma.atomic_rmw min %f[%i], %x acquire : memref<?xf32, #enigma.address_space<device>>
  %2 = enigma.atomic_rmw max %f[%i], %old relaxed : memref<?xf32, #enigma.address_space<device>>
  enigma.return
}
