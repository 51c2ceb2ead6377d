// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s --check-prefix=MSL
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s --check-prefix=CUDA
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s --check-prefix=CPP
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// Simdgroup async copies. MSL declares Apple's AIR intrinsics at file scope
// (only those the kernel uses) and calls them with the element's size and
// alignment; CUDA calls the prelude's warp-level cp.async copies with the
// thread's group counter and the warp's lanes (and uses 1-D blocks); the
// CPU copies each lane's share in the thread loop, so the wait disappears
// (a lane's copies are done when its thread loop ends).

// MSL-LABEL: struct _simdgroup_event_t;
// MSL-NEXT: typedef thread _simdgroup_event_t *enigma_async_event;
// MSL-NEXT: thread _simdgroup_event_t *enigma_async_copy_1d_d2t(ulong, ulong, threadgroup void *, const device void *, ulong)
// MSL-NEXT: __asm("air.simdgroup_async_copy_1d.p3i8.p1i8");
// MSL-NEXT: thread _simdgroup_event_t *enigma_async_copy_1d_t2d(ulong, ulong, device void *, const threadgroup void *, ulong)
// MSL-NEXT: __asm("air.simdgroup_async_copy_1d.p1i8.p3i8");
// MSL-NEXT: thread _simdgroup_event_t *enigma_async_copy_2d_d2t(ulong, ulong, threadgroup void *, ulong, ulong, ulong2, const device void *, ulong, ulong, ulong2, long2, int)
// MSL-NEXT: __asm("air.simdgroup_async_copy_2d.p3i8.p1i8");
// MSL-NEXT: thread _simdgroup_event_t *enigma_async_copy_2d_t2d(ulong, ulong, device void *, ulong, ulong, ulong2, const threadgroup void *, ulong, ulong, ulong2, long2, int)
// MSL-NEXT: __asm("air.simdgroup_async_copy_2d.p1i8.p3i8");
// MSL-NEXT: void enigma_async_copy_wait(int, thread _simdgroup_event_t **)
// MSL-NEXT: __asm("air.wait_simdgroup_events");
// MSL-LABEL: kernel void enigma_kernel_copies(
// MSL: if (
// MSL-NEXT: enigma_async_event [[E0:v[0-9]+]] = enigma_async_copy_1d_d2t(sizeof(float), alignof(float), (threadgroup void *)([[T:v[0-9]+]] + 0ul), (const device void *)(A + 8ul), (ulong)(64ul));
// MSL-NEXT: enigma_async_event [[E1:v[0-9]+]] = enigma_async_copy_2d_d2t(sizeof(float), alignof(float), (threadgroup void *)([[T]] + 0ul), (ulong)(8ul), 1ul, ulong2((ulong)(8ul), (ulong)(4ul)), (const device void *)(A + 0ul), (ulong)(64ul), 1ul, ulong2((ulong)(8ul), (ulong)(4ul)), long2(0, 0), 0);
// MSL-NEXT: {
// MSL-NEXT: enigma_async_event enigma_events[] = {[[E0]], [[E1]]};
// MSL-NEXT: enigma_async_copy_wait(2, enigma_events);
// MSL-NEXT: }
// MSL: enigma_async_copy_1d_t2d(sizeof(float), alignof(float), (device void *)(B + 0ul), (const threadgroup void *)([[T]] + 0ul), (ulong)(64ul));
// MSL: enigma_async_copy_2d_t2d(sizeof(float), alignof(float), (device void *)(B + 8ul), (ulong)(64ul), 1ul, ulong2((ulong)(8ul), (ulong)(4ul)), (const threadgroup void *)([[T]] + 0ul), (ulong)(8ul), 1ul,

// CUDA-LABEL: void enigma_kernel_copies(
// CUDA: const EnigmaLanes enigma_lanes = enigma_linear_lanes(
// CUDA: uint enigma_async_groups = 0u;
// CUDA: enigma_async_event [[E0:v[0-9]+]] = enigma_async_copy_1d_d2t(enigma_async_groups, ([[T:v[0-9]+]] + 0ul), (A + 8ul), 64ul, sizeof(float), enigma_lanes);
// CUDA-NEXT: enigma_async_event [[E1:v[0-9]+]] = enigma_async_copy_2d_d2t(enigma_async_groups, ([[T]] + 0ul), 8ul, (A + 0ul), 64ul, 8ul, 4ul, sizeof(float), enigma_lanes);
// CUDA-NEXT: enigma_async_copy_wait(enigma_async_groups, enigma_lanes, [[E0]], [[E1]]);
// CUDA: __syncthreads();
// CUDA: enigma_async_copy_1d_t2d(enigma_async_groups, (B + 0ul), ([[T]] + 0ul), 64ul, sizeof(float), enigma_lanes);

// CPP-LABEL: void enigma_kernel_copies(
// CPP: for (uint [[SG:v[0-9]+]] = 0u; (int)[[SG]] < (int)((enigma_nx * enigma_ny * enigma_nz + 31u) >> 5); [[SG]] += 1u) {
// CPP: for (uint enigma_lid = ([[SG]] * 32u),
// CPP: enigma_cpu_async_copy_1d((v{{[0-9]+}} + 0ul), (A + 8ul), 64ul, sizeof(float), enigma_cpu_simd_lane({{.*}}), enigma_cpu_simd_lanes({{.*}}, enigma_nx * enigma_ny * enigma_nz));
// CPP-NEXT: enigma_cpu_async_copy_2d((v{{[0-9]+}} + 0ul), 8ul, (A + 0ul), 64ul, 8ul, 4ul, sizeof(float),
// CPP-NEXT: }
// CPP-NEXT: }
// CPP-NEXT: }
// CPP-NEXT: // threadgroup_barrier(
// CPP: enigma_cpu_async_copy_1d((B + 0ul),
// CPP-NOT: enigma_async_event
enigma.kernel @copies(
    %A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "f32"},
    %B: memref<?xf32, #enigma.address_space<device>> {enigma.name = "B", enigma.dtype = "f32"}) {
  %t = enigma.threadgroup_alloc {enigma.dtype = "f32"} : memref<64xf32, #enigma.address_space<threadgroup>>
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %sg = enigma.simdgroup_index_in_threadgroup
  %z = arith.constant 0 : i32
  %first = arith.cmpi eq, %sg, %z : i32
  scf.if %first {
    %e0 = enigma.async_copy_1d_d2t %t[%c0], %A[%c8], %c64 : memref<64xf32, #enigma.address_space<threadgroup>>, memref<?xf32, #enigma.address_space<device>>
    %e1 = enigma.async_copy_2d_d2t %t[%c0], %c8, %A[%c0], %c64, %c8 x %c4 : memref<64xf32, #enigma.address_space<threadgroup>>, memref<?xf32, #enigma.address_space<device>>
    enigma.async_copy_wait %e0, %e1
  }
  enigma.barrier <threadgroup>
  %e2 = enigma.async_copy_1d_t2d %B[%c0], %t[%c0], %c64 : memref<?xf32, #enigma.address_space<device>>, memref<64xf32, #enigma.address_space<threadgroup>>
  %e3 = enigma.async_copy_2d_t2d %B[%c8], %c64, %t[%c0], %c8, %c8 x %c4 : memref<?xf32, #enigma.address_space<device>>, memref<64xf32, #enigma.address_space<threadgroup>>
  enigma.async_copy_wait %e2, %e3
  enigma.return
}

// An event carried by a loop is a variable of the target's event type.
// MSL-LABEL: kernel void enigma_kernel_carried(
// MSL: enigma_async_event [[P:v[0-9]+]] = v{{[0-9]+}};
// MSL: for (
// MSL: enigma_async_event enigma_events[] = {[[P]]};
// MSL: [[P]] = v{{[0-9]+}};
// CUDA-LABEL: void enigma_kernel_carried(
// CUDA: enigma_async_event [[P:v[0-9]+]] = v{{[0-9]+}};
// CUDA: enigma_async_copy_wait(enigma_async_groups, enigma_lanes, [[P]]);
// CPP-LABEL: void enigma_kernel_carried(
// CPP: enigma_async_event [[EV:v[0-9]+]][1024];
// CPP: enigma_cpu_async_copy_1d((v{{[0-9]+}} + 0ul), (A + 0ul), 32ul, sizeof(half),
// CPP-NEXT: [[EV]][enigma_slot] = 0u;
// CPP-NOT: async_copy_wait
enigma.kernel @carried(
    %A: memref<?xf16, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "f16"}) {
  %t = enigma.threadgroup_alloc {enigma.dtype = "f16"} : memref<64xf16, #enigma.address_space<threadgroup>>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  %first = enigma.async_copy_1d_d2t %t[%c0], %A[%c0], %c32 : memref<64xf16, #enigma.address_space<threadgroup>>, memref<?xf16, #enigma.address_space<device>>
  %last = scf.for %i = %c1 to %c4 step %c1 iter_args(%pending = %first) -> (!enigma.async_event) {
    %off = arith.muli %i, %c32 : index
    %next = enigma.async_copy_1d_d2t %t[%c32], %A[%off], %c32 : memref<64xf16, #enigma.address_space<threadgroup>>, memref<?xf16, #enigma.address_space<device>>
    enigma.async_copy_wait %pending
    scf.yield %next : !enigma.async_event
  }
  enigma.async_copy_wait %last
  enigma.return
}

// MSL copies memory that atomics also use through its view's pointer.
// MSL-LABEL: kernel void enigma_kernel_atomic_buffer(
// MSL: device atomic_uint* H
// MSL: enigma_async_copy_1d_t2d(sizeof(uint), alignof(uint), (device void *)(enigma_view_0.p + 0ul)
// MSL-NOT: air.simdgroup_async_copy_1d.p3i8
enigma.kernel @atomic_buffer(
    %H: memref<?xi32, #enigma.address_space<device>> {enigma.name = "H", enigma.dtype = "u32"}) {
  %t = enigma.threadgroup_alloc {enigma.dtype = "u32"} : memref<32xi32, #enigma.address_space<threadgroup>>
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %one = arith.constant 1 : i32
  %old = enigma.atomic_rmw add %H[%c0], %one relaxed : memref<?xi32, #enigma.address_space<device>>
  enigma.barrier <device>
  %e = enigma.async_copy_1d_t2d %H[%c0], %t[%c0], %c32 : memref<?xi32, #enigma.address_space<device>>, memref<32xi32, #enigma.address_space<threadgroup>>
  enigma.async_copy_wait %e
  enigma.return
}
