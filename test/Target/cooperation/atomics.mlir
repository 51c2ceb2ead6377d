// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s --check-prefix=MSL
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s --check-prefix=CUDA
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s --check-prefix=CPP
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// A buffer used atomically has Metal's atomic type; its plain loads and
// stores go through the view printed at file scope. Metal only has relaxed
// atomics, so every order prints as memory_order_relaxed in MSL.
// MSL: template <typename T, typename A> struct enigma_atomic_ref_device {
// MSL: struct enigma_atomics_threadgroup {
// MSL-LABEL: kernel void enigma_kernel_hist(
// MSL-NEXT: constant uint* data {{\[\[}}buffer(0){{\]\]}}
// MSL-NEXT: device atomic_uint* bins {{\[\[}}buffer(1){{\]\]}}
// MSL-NEXT: device atomic_int* ext {{\[\[}}buffer(2){{\]\]}}
// MSL-NEXT: device atomic_float* sum {{\[\[}}buffer(3){{\]\]}}
// MSL: const enigma_atomics_device<uint, atomic_uint> [[BINS:enigma_view_1]]{bins};
// MSL-NEXT: const enigma_atomics_device<int, atomic_int> [[EXT:enigma_view_2]]{ext};
// MSL-NEXT: const enigma_atomics_device<float, atomic_float> [[SUM:enigma_view_3]]{sum};
// MSL: threadgroup atomic_int enigma_[[T:v[0-9]+]][4];
// MSL-NEXT: const enigma_atomics_threadgroup<int, atomic_int> [[T]]{enigma_[[T]]};
// MSL: uint {{v[0-9]+}} = (uint)atomic_fetch_add_explicit(([[BINS]].p + {{.*}}), (uint){{.*}}, memory_order_relaxed);
// MSL: (uint)atomic_fetch_max_explicit(([[EXT]].p + {{.*}}), (int){{.*}}, memory_order_relaxed);
// MSL: (uint)atomic_fetch_min_explicit(([[EXT]].p + {{.*}}), (int){{.*}}, memory_order_relaxed);
// MSL: float {{v[0-9]+}} = (float)atomic_fetch_add_explicit(([[SUM]].p + {{.*}}), (float){{.*}}, memory_order_relaxed);
// MSL: atomic_store_explicit(([[T]].p + {{.*}}), (int){{.*}}, memory_order_relaxed);
// MSL: (uint)atomic_load_explicit(([[BINS]].p + {{.*}}), memory_order_relaxed);
// MSL: uint enigma_cas0 = (uint){{.*}};
// MSL-NEXT: bool {{v[0-9]+}} = atomic_compare_exchange_weak_explicit(([[BINS]].p + {{.*}}), &enigma_cas0, (uint){{.*}}, memory_order_relaxed, memory_order_relaxed);
// MSL-NEXT: uint {{v[0-9]+}} = (uint)enigma_cas0;
// MSL: uint {{v[0-9]+}} = [[BINS]][{{.*}}];
// MSL: [[EXT]][{{.*}}] = {{.*}};
//
// CUDA-LABEL: void enigma_kernel_hist(
// CUDA: uint* bins,
// CUDA: __shared__ uint [[T:v[0-9]+]][4];
// CUDA: atomic_fetch_add_explicit((uint *)&bins[{{.*}}], (uint){{.*}}, memory_order_relaxed);
// CUDA: atomic_fetch_max_explicit((int *)&ext[{{.*}}], (int){{.*}}, memory_order_acq_rel);
// CUDA: atomic_store_explicit((int *)&[[T]][{{.*}}], (int){{.*}}, memory_order_release);
// CUDA: atomic_load_explicit((uint *)&bins[{{.*}}], memory_order_acquire);
// CUDA: atomic_compare_exchange_weak_explicit((uint *)&bins[{{.*}}], &enigma_cas0, (uint){{.*}}, memory_order_acq_rel, memory_order_acquire);
//
// CPP-LABEL: extern "C" void enigma_kernel_hist(
// CPP: atomic_fetch_add_explicit((uint *)&bins[{{.*}}], (uint){{.*}}, memory_order_relaxed);
// CPP: atomic_fetch_min_explicit((int *)&ext[{{.*}}], (int){{.*}}, memory_order_relaxed);
// CPP: atomic_fetch_add_explicit((float *)&sum[{{.*}}], (float){{.*}}, memory_order_relaxed);
enigma.kernel @hist(%data: memref<?xi32, #enigma.address_space<constant>> {enigma.name = "data", enigma.dtype = "u32"},
                    %bins: memref<?xi32> {enigma.name = "bins", enigma.dtype = "u32"},
                    %ext: memref<?xi32> {enigma.name = "ext", enigma.dtype = "i32"},
                    %sum: memref<?xf32> {enigma.name = "sum", enigma.dtype = "f32"}) {
  %t = enigma.threadgroup_alloc {enigma.dtype = "i32"} : memref<4xi32, #enigma.address_space<threadgroup>>
  %tid = enigma.thread_position_in_grid <x>
  %i = arith.index_castui %tid : i32 to index
  %v = memref.load %data[%i] : memref<?xi32, #enigma.address_space<constant>>
  %c15 = arith.constant 15 : i32
  %bin = arith.andi %v, %c15 : i32
  %b = arith.index_castui %bin : i32 to index
  %one = arith.constant 1 : i32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %old = enigma.atomic_rmw add %bins[%b], %one relaxed : memref<?xi32>
  %m = enigma.atomic_rmw max %ext[%c0], %v acq_rel : memref<?xi32>
  %n = enigma.atomic_rmw min %ext[%c1], %v relaxed : memref<?xi32>
  %f = arith.uitofp %v : i32 to f32
  %s = enigma.atomic_rmw add %sum[%c0], %f relaxed : memref<?xf32>
  enigma.atomic_store %old, %t[%c0] release : memref<4xi32, #enigma.address_space<threadgroup>>
  %l = enigma.atomic_load %bins[%c0] acquire : memref<?xi32>
  %obs, %ok = enigma.atomic_compare_exchange_weak %bins[%c1], %l, %one acq_rel acquire : memref<?xi32>
  %p = memref.load %bins[%c1] : memref<?xi32>
  %q = arith.addi %p, %obs : i32
  memref.store %q, %ext[%c1] : memref<?xi32>
  enigma.return
}
